import { connect, credsAuthenticator } from "@nats-io/transport-node";
import { CotalError } from "../../schemas/index.js";
import { serverUrls } from "../connect.js";
import { readSecret } from "./secret-files.js";
import { clientsAccount, type AuthStore } from "./auth-store.js";

/** The server did not accept an account update. */
export class ClaimsUpdateError extends CotalError {
  constructor(detail: string, cause?: unknown) {
    super("claims-update-failed", `The server did not accept the account update: ${detail}.`, {
      remedy: "Check that the mesh was started by `cotal up` with this .cotal/auth folder and is running.",
      cause,
    });
  }
}

/**
 * Push an account JWT to the running server (as the system account's user). With the full
 * resolver this takes effect at once: revoked users' live connections are closed.
 */
export async function pushAccountJwt(store: AuthStore, server: string, jwt: string): Promise<void> {
  const nc = await connect({
    servers: serverUrls(server),
    authenticator: credsAuthenticator(readSecret(store.path("creds", "sys.creds"))),
    name: "cotal-claims",
  });
  try {
    const reply = await nc.request("$SYS.REQ.CLAIMS.UPDATE", new TextEncoder().encode(jwt), { timeout: 5_000 });
    const body = JSON.parse(new TextDecoder().decode(reply.data)) as { data?: { code?: number; message?: string }; error?: { description?: string } };
    if (body.error) throw new ClaimsUpdateError(body.error.description ?? "error");
    if (body.data?.code !== undefined && body.data.code !== 200) throw new ClaimsUpdateError(body.data.message ?? String(body.data.code));
  } catch (err) {
    if (err instanceof ClaimsUpdateError) throw err;
    throw new ClaimsUpdateError((err as Error).message, err);
  } finally {
    await nc.close();
  }
}

/** Push every account JWT of a space (data and clients) to a running server. */
export async function pushSpaceAccounts(store: AuthStore, server: string, space: string): Promise<void> {
  for (const jwt of store.spaceJwts(space)) await pushAccountJwt(store, server, jwt);
}

/** Revoke users of a space's clients account by public key, now, on the running server. */
export async function revokeUsers(store: AuthStore, server: string, space: string, userPubs: string[]): Promise<void> {
  if (!userPubs.length) return;
  const now = Math.floor(Date.now() / 1000);
  const jwt = await store.writeAccountJwt(clientsAccount(space), Object.fromEntries(userPubs.map((p) => [p, now])));
  await pushAccountJwt(store, server, jwt);
}

import { connect } from "@nats-io/transport-node";
import { CotalError } from "../../schemas/index.js";
import { credsBytesAuthenticator, serverUrls } from "../connect.js";
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
    authenticator: credsBytesAuthenticator(readSecret(store.path("creds", "sys.creds"))),
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

/** A credential to revoke: its user key, and when it expires (ms; absent: never). */
export interface RevokedUser {
  pub: string;
  expiresAt?: number | undefined;
}

/**
 * Most revocations a clients account's JWT carries. Each takes ~93 bytes of the JWT (a user key
 * and a time, base64url-encoded); 9,000 make ~850 KB, inside nats-server's default 1 MiB
 * max_payload, which the JWT must pass as one `$SYS.REQ.CLAIMS.UPDATE` request.
 */
export const MAX_REVOCATIONS = 9_000;

/**
 * Revoke users of a space's clients account by public key, now, on the running server. Expired
 * credentials' revocations are dropped as they go (AuthStore.writeAccountJwt); past `maxRevocations`
 * it throws RevocationListFullError and revokes nothing. A failed push throws ClaimsUpdateError:
 * the revocation is kept in the store and goes with the next push, but it is not in force yet.
 */
export async function revokeUsers(store: AuthStore, server: string, space: string, users: RevokedUser[], maxRevocations = MAX_REVOCATIONS): Promise<void> {
  if (!users.length) return;
  const now = Math.floor(Date.now() / 1000);
  // One key may have been minted more than once (the caller sends the key): it expires with the last.
  const expiries: Record<string, number | undefined> = {};
  for (const u of users) {
    const exp = u.expiresAt === undefined ? undefined : Math.ceil(u.expiresAt / 1000);
    const prev = expiries[u.pub];
    expiries[u.pub] = !(u.pub in expiries) ? exp : prev === undefined || exp === undefined ? undefined : Math.max(prev, exp);
  }
  const jwt = await store.writeAccountJwt(clientsAccount(space), Object.fromEntries(users.map((u) => [u.pub, now])), expiries, maxRevocations, now);
  await pushAccountJwt(store, server, jwt);
}

/** Revocations in force in a space's clients account: those of credentials not yet expired. */
export function liveRevocations(store: AuthStore, space: string, now = Math.floor(Date.now() / 1000)): number {
  const expiry = store.revocationExpiries(clientsAccount(space));
  return Object.keys(store.revocations(clientsAccount(space))).filter((pub) => !(expiry[pub] !== undefined && expiry[pub] <= now)).length;
}

import { encodeUser, fmtCreds } from "@nats-io/jwt";
import { createUser, fromPublic, type KeyPair } from "@nats-io/nkeys";
import { CotalError, principalId } from "../../schemas/index.js";
import { clientsAccount, type AuthStore } from "./auth-store.js";
import { permissionsFor, SERVICE_PRINCIPALS, type IdentitySpec } from "./permissions.js";

/** A signed user credential. */
export interface MintedUser {
  jwt: string;
  /** The user's public nkey (revocations name it). */
  userPub: string;
  issuedAt: number;
  expiresAt?: number;
}

/** The requested profile/scope combination is refused. */
export class MintRefusedError extends CotalError {
  constructor(message: string, remedy: string) {
    super("mint-refused", message, { remedy });
  }
}

/** Check a mint request makes sense before signing anything. */
export function checkMintSpec(spec: IdentitySpec): void {
  if (spec.profile !== "agent" && (spec.allowSubscribe?.length || spec.allowPublish?.length)) {
    throw new MintRefusedError(
      `The ${spec.profile} profile has a fixed view; --allow-subscribe and --allow-publish apply to agents only.`,
      "A scoped reader is an agent with --allow-subscribe and no --allow-publish, e.g. `cotal mint watcher --profile agent --allow-subscribe events.local.<actor> --provision`.",
    );
  }
  if (spec.profile === "agent" && spec.who.actor.startsWith("cotal_")) {
    throw new MintRefusedError(`Names starting with cotal_ are reserved for Cotal's own services.`, "Choose another name.");
  }
}

/** The tags a credential carries: `cotal-space:<space>` and `cotal-profile:<profile>`. */
export function credsTags(spec: Pick<IdentitySpec, "space" | "profile">): string[] {
  return [`cotal-space:${spec.space}`, `cotal-profile:${spec.profile}`];
}

/**
 * Sign a user JWT for `userPub` with the space's signing key. The user's seed never reaches
 * the signer: callers generate the key pair where the credential will live.
 */
export async function signUser(spec: IdentitySpec, userPub: string, signingKey: KeyPair, accountPub: string, expiresInMs?: number): Promise<MintedUser> {
  checkMintSpec(spec);
  const issuedAt = Math.floor(Date.now() / 1000);
  const exp = expiresInMs ? issuedAt + Math.ceil(expiresInMs / 1000) : undefined;
  // A user signed by the account key itself names no issuer account (only signing keys do).
  const viaSigningKey = signingKey.getPublicKey() !== accountPub;
  const jwt = await encodeUser(
    principalId(spec.who),
    fromPublic(userPub),
    fromPublic(accountPub),
    // Tags let a client name its own space and profile in a refusal; the server does not read them.
    { ...permissionsFor(spec), tags: credsTags(spec), ...(viaSigningKey ? { issuer_account: accountPub } : {}) },
    { signer: signingKey, ...(exp ? { exp } : {}) },
  );
  return { jwt, userPub, issuedAt, ...(exp ? { expiresAt: exp * 1000 } : {}) };
}

/**
 * The credential of one of Cotal's own services on the mesh host. The mesh service lives in the
 * space's data account (signed by that account's key, which only the auth store holds); every
 * other identity lives in the clients account (signed by its signing key).
 */
export async function serviceCreds(store: AuthStore, space: string, service: keyof typeof SERVICE_PRINCIPALS): Promise<Uint8Array> {
  const spec: IdentitySpec = { space, who: SERVICE_PRINCIPALS[service], profile: service };
  if (service === "mesh") return (await mintCreds(spec, store.accountKey(space), store.accountKey(space).getPublicKey())).creds;
  return (await mintCreds(spec, store.signingKey(space), store.accountKey(clientsAccount(space)).getPublicKey())).creds;
}

/** Generate a user key pair and sign it in one step (for service identities on the mesh host). */
export async function mintCreds(
  spec: IdentitySpec,
  signingKey: KeyPair,
  accountPub: string,
  expiresInMs?: number,
): Promise<{ creds: Uint8Array; user: MintedUser }> {
  const kp = createUser();
  const user = await signUser(spec, kp.getPublicKey(), signingKey, accountPub, expiresInMs);
  return { creds: fmtCreds(user.jwt, kp), user };
}

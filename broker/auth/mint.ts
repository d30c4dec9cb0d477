import { encodeUser, fmtCreds } from "@nats-io/jwt";
import { fromPublic, type KeyPair } from "@nats-io/nkeys";
import { CotalError, principalId } from "../../schemas/index.js";
import { clientsAccount, type AuthStore } from "./auth-store.js";
import { userLimits } from "./credential-limits.js";
import { newNkey } from "./native-nkeys.js";
import { LEAF_SUFFIX, leafHostManager, permissionsFor, SERVICE_PRINCIPALS, type IdentitySpec } from "./permissions.js";
import { MAX_REVOCATIONS } from "./revoke.js";

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

/** How to mint a scoped reader, for refusals that point at it. */
const READER_HINT =
  "A scoped reader is `--profile reader`, e.g. `cotal mint watcher --profile reader --allow-subscribe 'events.local.<actor>,general' --provision`.";

/** Check a mint request makes sense before signing anything. */
export function checkMintSpec(spec: IdentitySpec): void {
  const scoped = spec.profile === "agent" || spec.profile === "reader";
  if (!scoped && (spec.allowSubscribe?.length || spec.allowPublish?.length)) {
    throw new MintRefusedError(
      `The ${spec.profile} profile has a fixed view; --allow-subscribe and --allow-publish apply to agents and readers only.`,
      READER_HINT,
    );
  }
  if (spec.profile === "reader" && (spec.allowPublish?.length || spec.role || spec.events || spec.allowSpawn?.length)) {
    const what = spec.allowPublish?.length ? "--allow-publish" : spec.role ? "--role" : spec.events ? "--events" : "--allow-spawn";
    throw new MintRefusedError(
      `A reader publishes nothing: ${what} applies to agents only.`,
      "Leave it out for a reader, or mint an agent (`--profile agent`), which may post, DM and take anycasts as itself.",
    );
  }
  if (spec.profile === "person" && (spec.role || spec.events)) {
    throw new MintRefusedError(
      `A person holds no role and runs no seat: ${spec.role ? "--role" : "--events"} applies to agents only.`,
      "Leave it out: a person posts on every channel, DMs and anycasts as itself and reads every channel and its own DMs.",
    );
  }
  if (spec.profile !== "agent" && spec.profile !== "reader" && spec.allowSpawn?.length) {
    throw new MintRefusedError(
      `The ${spec.profile} profile has a fixed view; --allow-spawn applies to agents only.`,
      "Mint an agent (`--profile agent`) that may spawn helpers: `cotal mint <name> --allow-spawn <personas>`.",
    );
  }
  if (spec.steer && spec.profile !== "person") {
    throw new MintRefusedError(
      `The steer right is a person's: the ${spec.profile} profile has no --steer.`,
      "Mint a person (`cotal mint <name> --profile person --steer`); an agent spawns helpers with --allow-spawn.",
    );
  }
  if (spec.spawnLimit !== undefined && !spec.allowSpawn?.length) {
    throw new MintRefusedError(
      "--spawn-limit bounds the helpers of a credential that may spawn them; this one may spawn none.",
      "Add --allow-spawn <personas>, or leave out --spawn-limit.",
    );
  }
  if (scoped && spec.who.actor.startsWith("cotal_")) {
    throw new MintRefusedError(`Names starting with cotal_ are reserved for Cotal's own services.`, "Choose another name.");
  }
  if (spec.profile === "leaf" && !leafHostManager(spec.who)) {
    throw new MintRefusedError(
      `A leaf credential is named after its host: <host>${LEAF_SUFFIX} (the host whose manager is <host>); ${spec.who.actor} is not.`,
      `For a host whose manager runs as hostb: cotal mint hostb${LEAF_SUFFIX} --profile leaf.`,
    );
  }
}

/**
 * What a credential other than the operator's may mint (a manager's, for its seats): each such
 * credential expires, so its revocation leaves the account's list when it does, and one minter
 * holds a bounded number at once, so no flood can fill the list the operator's revocations need
 * (docs/security.md, Revocation).
 */
export interface MintLimits {
  /** Longest such a credential lives, ms (default 30 days; asked longer or never, it gets this). */
  maxLifetimeMs: number;
  /** Most unexpired credentials one minter holds, revoked ones included (default 1,000). */
  perMinter: number;
  /** No such mint while the revocation list holds this many (default 6,000): the rest is kept for the operator's revocations. */
  mintersRevocationCap: number;
  /** Most revocations the clients account's JWT carries (default MAX_REVOCATIONS). */
  maxRevocations: number;
  /** Most bytes the space's leaf scopes take in that JWT (default MAX_LEAF_SCOPES_BYTES, leaf-scope.ts). */
  leafScopesBytes: number;
}

export const DEFAULT_MINT_LIMITS: MintLimits = {
  maxLifetimeMs: 30 * 24 * 3600_000,
  perMinter: 1_000,
  mintersRevocationCap: 6_000,
  maxRevocations: MAX_REVOCATIONS,
  leafScopesBytes: 120_000,
};

/** The tags a credential carries: `cotal-space:<space>` and `cotal-profile:<profile>`. */
export function credsTags(spec: Pick<IdentitySpec, "space" | "profile">): string[] {
  return [`cotal-space:${spec.space}`, `cotal-profile:${spec.profile}`];
}

/**
 * Sign a user JWT for `userPub` with the space's signing key (a leaf's: its scoped key, AuthStore.leafScopeKey). The user's seed never reaches
 * the signer: callers generate the key pair where the credential will live.
 */
export async function signUser(spec: IdentitySpec, userPub: string, signingKey: KeyPair, accountPub: string, expiresInMs?: number): Promise<MintedUser> {
  checkMintSpec(spec);
  const issuedAt = Math.floor(Date.now() / 1000);
  const exp = expiresInMs ? issuedAt + Math.ceil(expiresInMs / 1000) : undefined;
  // A leaf credential carries no permissions: its scoped signing key's template in the account JWT
  // is what it may do (leaf-scope.ts), and the server refuses a scoped user that carries any.
  if (spec.profile === "leaf") {
    const jwt = await encodeUser(
      principalId(spec.who),
      fromPublic(userPub),
      fromPublic(accountPub),
      { tags: credsTags(spec) },
      {
        signer: signingKey,
        scopedUser: true,
        ...(exp ? { exp } : {}),
      },
    );
    return { jwt, userPub, issuedAt, ...(exp ? { expiresAt: exp * 1000 } : {}) };
  }
  // A user signed by the account key itself names no issuer account (only signing keys do).
  const viaSigningKey = signingKey.getPublicKey() !== accountPub;
  const jwt = await encodeUser(
    principalId(spec.who),
    fromPublic(userPub),
    fromPublic(accountPub),
    // Tags let a client name its own space and profile in a refusal; the server does not read them.
    // The limits bound what each of its connections may cost the broker (credential-limits.ts).
    { ...permissionsFor(spec), ...userLimits(spec.profile), tags: credsTags(spec), ...(viaSigningKey ? { issuer_account: accountPub } : {}) },
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
  const kp = newNkey("user");
  const user = await signUser(spec, kp.getPublicKey(), signingKey, accountPub, expiresInMs);
  return { creds: fmtCreds(user.jwt, kp), user };
}

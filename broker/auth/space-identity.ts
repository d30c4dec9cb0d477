import { existsSync, renameSync, rmSync } from "node:fs";
import { isAbsolute, join, normalize, sep } from "node:path";
import { CotalError } from "../../schemas/index.js";
import { AuthStore, clientsAccount, SYSTEM_ACCOUNT } from "./auth-store.js";
import { readSecret, writeSecret } from "./secret-files.js";

/** One file of a space's identity: its path inside the auth store, and its bytes. */
export interface IdentityFile {
  path: string;
  bytes: Uint8Array;
}

/** The identity files of `space` in `store` (AuthStore.spaceIdentityFiles), read for a backup. */
export function readSpaceIdentity(store: AuthStore, space: string): IdentityFile[] {
  return store.spaceIdentityFiles(space).map((path) => ({ path, bytes: readSecret(store.path(path)) }));
}

/** A backup's identity files do not make a usable auth store for its space. */
export class IdentityIncompleteError extends CotalError {
  constructor(space: string, detail: string, cause?: unknown) {
    super("identity-incomplete", `The backup's identity of space ${space} cannot be used: ${detail}; nothing was changed.`, {
      remedy: "Restore from another backup, or from a copy of the original one (`cotal backup` writes the operator, system and space accounts).",
      cause,
    });
  }
}

/** What adoptSpaceIdentity did. */
export interface AdoptedIdentity {
  /** Where the store it replaced was moved (absent: there was none). */
  replaced?: string;
  /** The replaced store held this same space identity (the same clients account key). */
  sameIdentity: boolean;
  /** Revocations of the replaced store the backup did not have, kept in force. */
  revocationsKept: number;
}

/**
 * Make the auth store at `dir` the identity a backup carries for `space`: its operator, system
 * account, data account and clients account with its signing key and revocation list. Credentials
 * minted by the backed-up mesh then verify against this one (the same keys sign them), and the
 * ones it revoked stay revoked (the list travels in the clients account's JWT).
 *
 * The files are written to a staging folder beside `dir` and checked there (every key loads, the
 * clients account's JWT names its signing key); only then is the current store moved aside, to
 * `<dir>.replaced-<time>`, and the staged one put in its place. A current store with this same
 * identity (a restore onto the mesh the backup came from) keeps every revocation it made since:
 * a credential revoked anywhere stays revoked.
 */
export async function adoptSpaceIdentity(dir: string, space: string, files: IdentityFile[], now = new Date()): Promise<AdoptedIdentity> {
  const stamp = now.toISOString().replace(/[:.]/g, "-");
  const staging = `${dir}.incoming-${stamp}`;
  rmSync(staging, { recursive: true, force: true });
  try {
    for (const f of files) writeSecret(join(staging, insideStore(f.path, space)), f.bytes);
    const incoming = AuthStore.existing(staging);
    if (!incoming) throw new IdentityIncompleteError(space, "it has no operator key");
    const clientsPub = checkIdentity(incoming, space);
    const current = AuthStore.existing(dir);
    const currentClients = current ? publicKeyOf(current, space) : undefined;
    const sameIdentity = currentClients !== undefined && currentClients === clientsPub;
    let revocationsKept = 0;
    if (current && sameIdentity) {
      const have = incoming.revocations(clientsAccount(space));
      const theirs = current.revocations(clientsAccount(space));
      const expiries = current.revocationExpiries(clientsAccount(space));
      const add = Object.fromEntries(Object.entries(theirs).filter(([pub, at]) => !(pub in have) || have[pub]! < at));
      revocationsKept = Object.keys(add).length;
      if (revocationsKept) await incoming.writeAccountJwt(clientsAccount(space), add, Object.fromEntries(Object.keys(add).map((pub) => [pub, expiries[pub]])));
    }
    let replaced: string | undefined;
    if (existsSync(dir)) {
      replaced = `${dir}.replaced-${stamp}`;
      renameSync(dir, replaced);
    }
    renameSync(staging, dir);
    return { ...(replaced ? { replaced } : {}), sameIdentity, revocationsKept };
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

/** A path from a backup, kept inside the store (no absolute path, no `..`). */
function insideStore(path: string, space: string): string {
  const p = normalize(path);
  if (isAbsolute(p) || p === ".." || p.startsWith(`..${sep}`))
    throw new IdentityIncompleteError(space, `${JSON.stringify(path)} is not a path inside an auth store`);
  return p;
}

function publicKeyOf(store: AuthStore, space: string): string | undefined {
  try {
    return store.accountKey(clientsAccount(space)).getPublicKey();
  } catch {
    return undefined;
  }
}

/** Every key a mesh of `space` needs loads, and the clients account's JWT lists its signing key; returns the clients account's key. */
function checkIdentity(store: AuthStore, space: string): string {
  try {
    store.operatorKey();
    store.accountKey(SYSTEM_ACCOUNT);
    store.accountKey(space);
    const clients = store.accountKey(clientsAccount(space)).getPublicKey();
    const signing = store.signingKey(space).getPublicKey();
    const claims = JSON.parse(Buffer.from(store.accountJwt(clientsAccount(space)).split(".")[1] ?? "", "base64url").toString("utf8")) as {
      sub?: string;
      nats?: { signing_keys?: unknown[] };
    };
    if (claims.sub !== clients) throw new IdentityIncompleteError(space, "the clients account's JWT is not that account's");
    const keys = (claims.nats?.signing_keys ?? []).map((k) => (typeof k === "string" ? k : (k as { key?: string }).key));
    if (!keys.includes(signing)) throw new IdentityIncompleteError(space, "the clients account's JWT does not list its signing key");
    return clients;
  } catch (err) {
    if (err instanceof IdentityIncompleteError) throw err;
    throw new IdentityIncompleteError(space, `a key or JWT is missing or unreadable (${(err as Error).message})`, err);
  }
}

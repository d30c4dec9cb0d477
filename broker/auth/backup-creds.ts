import { encodeUser, fmtCreds } from "@nats-io/jwt";
import { JS_API, principalId } from "../../schemas/index.js";
import type { AuthStore } from "./auth-store.js";
import { newNkey } from "./native-nkeys.js";

/** The name `cotal backup` and `cotal restore` connect as (never minted to anyone). */
export const BACKUP_PRINCIPAL = { owner: "local", actor: "cotal_backup" } as const;

/** How long a backup credential lives: it exists only for one run, in memory and a 0600 file removed after. */
const BACKUP_CREDS_LIFETIME_S = 24 * 3600;

/**
 * A credential for `cotal backup` and `cotal restore` on the mesh host: a user of the space's data
 * account (where every stream lives; no client credential reaches it) signed with that account's
 * key, which only the auth store holds. It may call JetStream's API and send and acknowledge
 * snapshot chunks (`$JS.SNAPSHOT.>`), and read its own inbox; nothing of the space's subjects.
 */
export async function backupCreds(store: AuthStore, space: string): Promise<Uint8Array> {
  const account = store.accountKey(space);
  const user = newNkey("user");
  const jwt = await encodeUser(
    principalId(BACKUP_PRINCIPAL),
    user,
    account,
    { pub: { allow: [`${JS_API}.>`, "$JS.SNAPSHOT.>"] }, sub: { allow: ["_INBOX.>"] } },
    { exp: Math.floor(Date.now() / 1000) + BACKUP_CREDS_LIFETIME_S },
  );
  return fmtCreds(jwt, user);
}

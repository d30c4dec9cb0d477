// The credentials `cotal up` keeps on the mesh host (the host manager's, the person's): minted,
// minted again and renewed; reading what any credential file says is credential-scope.ts.
import { existsSync, readFileSync } from "node:fs";
import type { NatsConnection } from "@nats-io/transport-node";
import {
  AuthenticationRefusedError,
  callControl,
  connectMesh,
  credsCaller,
  credsClaims,
  permissionsFor,
  requestCredential,
  requestRevoke,
  writeSecret,
} from "../../broker/index.js";
import { renewalDueAt } from "../../manager/index.js";
import { localPrincipal } from "../../schemas/index.js";

/** A mesh on the mesh host, with the operator's credential. */
export type StaticTarget = { server: string; space: string; creds: string };

/**
 * A credential `cotal up` keeps for someone on the mesh host, minted by the operator once into a
 * file of its own (0600): the host manager's (profile `manager`, named like its instance) and the
 * person's at the mesh host (profile `person`, docs/security.md).
 */
export interface HostIdentity {
  name: string;
  profile: "manager" | "person";
  /** What the notes call it: "the host manager's credential". */
  label: string;
  /** The mesh service creates its DM inbox when minting it (a person's). */
  provision?: boolean;
  /** A person that may steer seats (the person at the mesh host). */
  steer?: boolean;
  /** Seats whose permission asks it may answer (a person's; `*`: every seat). */
  approve?: string[];
}

/** What `keepHostCredential` did. */
export type HostCredentialState = "kept" | "minted" | "reminted";

/**
 * Keep `file` a credential the mesh knows, of `id`'s profile, with exactly the rights this version
 * mints for it: minted once; minted again when the mesh does not know it (its store was replaced,
 * it was revoked or expired) or when it carries an older Cotal's rights (then every earlier one is
 * revoked first: its other rights are the point); renewed when less than a third of its life is left.
 */
export async function keepHostCredential(t: StaticTarget, file: string, id: HostIdentity, notes: string[]): Promise<HostCredentialState> {
  let stale = false;
  if (existsSync(file)) {
    const known = await credentialKnown(t, file, id.profile);
    stale = known !== false && !rightsCurrent(readFileSync(file), t.space, id);
    if (known !== false && !stale) {
      await renewHostCredential(t, file, id, notes);
      return "kept";
    }
    notes.push(
      stale
        ? `${id.label} carried the rights of an older Cotal (a ${id.profile}'s rights changed since): revoked it and minted it again`
        : `${id.label} is not one this mesh knows (minted before its store was replaced, revoked, or expired): minted it again`,
    );
  }
  const again = existsSync(file);
  await mintHostCredential(t, file, id, { revokeOlder: stale, lifetimeMs: again ? lifetimeOf(file) : undefined });
  return again ? "reminted" : "minted";
}

/**
 * Mint `id`'s credential as the operator and write it atomically, 0600, over `file` (a running
 * process reads it at its next reconnect). `revokeOlder`: every earlier credential of the name is
 * revoked first. `lifetimeMs`: the new one expires (undefined: never, the operator's default).
 */
async function mintHostCredential(
  t: StaticTarget,
  file: string,
  id: HostIdentity,
  o: { revokeOlder?: boolean; lifetimeMs?: number | undefined },
): Promise<void> {
  const nc = await connectMesh({ server: t.server, creds: t.creds, name: "cotal-up" });
  try {
    // An older credential must not stay valid beside the new one: its other rights are the point.
    if (o.revokeOlder) await requestRevoke(nc, t.space, id.name);
    const { creds } = await requestCredential(nc, t.space, {
      name: id.name,
      profile: id.profile,
      ...(id.provision ? { provision: true } : {}),
      ...(id.steer ? { steer: true } : {}),
      ...(id.approve?.length ? { approve: id.approve } : {}),
      ...(o.lifetimeMs ? { expiresInMs: o.lifetimeMs } : {}),
    });
    writeSecret(file, creds);
  } finally {
    await nc.close().catch(() => undefined);
  }
}

/** How long a credential file was signed to live (ms), or undefined when it never expires. */
function lifetimeOf(file: string): number | undefined {
  const c = credsClaims(readFileSync(file));
  return c?.exp !== undefined && c.iat !== undefined ? (c.exp - c.iat) * 1000 : undefined;
}

/**
 * A kept credential that expires is minted again by `cotal up` once less than a third of its life
 * is left (renewalDueAt, as a manager renews its seats'), with the same lifetime: a running process
 * takes the new file at its next reconnect, at the latest when the server closes its expired
 * connection (docs/security.md, Credential lifetime and renewal). The older credential is not
 * revoked: it expires by itself. The operator mints these without an expiry, so by default this never comes.
 */
export async function renewHostCredential(t: StaticTarget, file: string, id: HostIdentity, notes: string[]): Promise<void> {
  if (!existsSync(file)) return;
  const due = renewalDueAt(file);
  const lifetimeMs = lifetimeOf(file);
  if (due === undefined || lifetimeMs === undefined || Date.now() < due) return;
  const expires = new Date(credsClaims(readFileSync(file))!.exp! * 1000).toISOString();
  await mintHostCredential(t, file, id, { lifetimeMs });
  notes.push(
    `${id.label} had less than a third of its life left (it expires at ${expires}): minted it again with the same lifetime; the running ${id.profile} takes it at its next reconnect`,
  );
}

/**
 * Whether a credential carries exactly the rights this version mints for its profile: a credential
 * minted by an older Cotal keeps the rights it was signed with until it is minted again.
 */
export function rightsCurrent(creds: Uint8Array, space: string, id: Pick<HostIdentity, "name" | "profile" | "steer">): boolean {
  const claims = credsClaims(creds);
  if (!claims) return false;
  const want = permissionsFor({ space, who: localPrincipal(id.name), profile: id.profile, ...(id.steer ? { steer: true } : {}) });
  const same = (a: readonly string[], b: readonly string[] = []) => a.length === b.length && [...a].sort().join("\n") === [...b].sort().join("\n");
  return same(claims.pubAllow, want.pub?.allow) && same(claims.subAllow, want.sub?.allow);
}

/**
 * Whether the mesh still knows `file` as a credential of `profile`: false when the broker refuses
 * it or the mesh service holds no record of its name with that profile (a store started anew, as
 * when a folder's single node becomes a cluster, keeps the account keys, so the credential
 * connects, but not the records). Undefined when it cannot tell (an older mesh service without
 * `whoami`): the file is kept.
 */
async function credentialKnown(t: { server: string; space: string }, file: string, profile: HostIdentity["profile"]): Promise<boolean | undefined> {
  let nc: NatsConnection;
  try {
    nc = await connectMesh({ server: t.server, creds: file, name: "cotal-up" });
  } catch (err) {
    return err instanceof AuthenticationRefusedError ? false : undefined;
  }
  try {
    const me = await callControl(nc, t.space, "whoami", credsCaller(file), {}, { timeoutMs: 5_000 });
    return me.profile === profile;
  } catch {
    return undefined;
  } finally {
    await nc.close().catch(() => undefined);
  }
}

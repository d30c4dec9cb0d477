import type { Permissions } from "@nats-io/jwt";
import { CotalError, principalId, type Principal } from "../../schemas/index.js";
import { clientsAccount, type AuthStore } from "./auth-store.js";
import type { IdentityRecord, IdentityRegistry } from "./identity-registry.js";
import { leafPermissions, type IdentitySpec } from "./permissions.js";
import { DEFAULT_MINT_LIMITS } from "./mint.js";
import { MAX_REVOCATIONS } from "./revoke.js";

/**
 * Most bytes the leaf scopes of a space may take in its clients account's JWT, as JSON. The JWT
 * goes to the server as one `$SYS.REQ.CLAIMS.UPDATE` request (1 MiB max_payload) beside up to
 * MAX_REVOCATIONS revocations (~850 KB of it): this keeps both inside. A seat with one channel adds
 * about 730 bytes (measured), so some 150 such seats fit across a space's leaf hosts.
 */
export const MAX_LEAF_SCOPES_BYTES = DEFAULT_MINT_LIMITS.leafScopesBytes;

/** Identities that may run on a leaf host besides its manager: its scope covers them. */
export const LEAF_SEAT_PROFILES: ReadonlySet<string> = new Set(["agent", "reader", "observer"]);

/** The leaf hosts' scopes would outgrow the account JWT. */
export class LeafScopeFullError extends CotalError {
  constructor(leaf: string, bytes: number, max: number) {
    super(
      "leaf-scope-full",
      `Widening ${leaf}'s scope to this seat would make the space's leaf scopes ${bytes} bytes, more than the ${max} the account JWT keeps for them (beside its ${MAX_REVOCATIONS} revocations); nothing was minted.`,
      { remedy: "Retire seats on leaf hosts that no longer need to run (`cotal stop`), or run more of them on the mesh host." },
    );
  }
}

/** The identity a mint request or its record describes, as permissionsFor builds its rights. */
export function seatSpec(
  space: string,
  who: Principal,
  rec: Pick<IdentityRecord, "profile" | "allowSubscribe" | "allowPublish" | "role" | "events" | "allowSpawn"> & { steer?: boolean | undefined },
): IdentitySpec {
  return {
    space,
    who,
    profile: rec.profile,
    allowSubscribe: rec.allowSubscribe,
    allowPublish: rec.allowPublish,
    ...(rec.role ? { role: rec.role } : {}),
    ...(rec.events !== undefined ? { events: rec.events } : {}),
    ...(rec.allowSpawn?.length ? { allowSpawn: rec.allowSpawn } : {}),
    ...(rec.steer ? { steer: true } : {}),
  };
}

/**
 * The identities a leaf's scope covers: agents (its seats), readers and observers minted through
 * that leaf or for it (`cotal mint --on`), with a credential neither revoked nor expired. `extra`
 * (a seat being minted now) is counted as live.
 */
export async function leafSeats(store: AuthStore, identities: IdentityRegistry, space: string, leaf: Principal, extra?: IdentitySpec): Promise<IdentitySpec[]> {
  const revoked = store.revocations(clientsAccount(space));
  const now = Date.now();
  const live = (u: IdentityRecord["users"][number]) => !(u.pub in revoked) && (u.expiresAt ?? Number.POSITIVE_INFINITY) > now;
  const seats = new Map<string, IdentitySpec>();
  for (const m of await identities.mintedVia(leaf))
    if (LEAF_SEAT_PROFILES.has(m.rec.profile) && m.users.some(live)) seats.set(principalId(m.who), seatSpec(space, m.who, m.rec));
  if (extra) seats.set(principalId(extra.who), extra);
  return [...seats.values()];
}

/** What `leaf`'s scope should say for `seats`, and whether that differs from what the store holds. */
export function plannedLeafScope(
  store: AuthStore,
  space: string,
  leaf: Principal,
  seats: IdentitySpec[],
  maxBytes = MAX_LEAF_SCOPES_BYTES,
): { perms: Partial<Permissions>; changed: boolean } {
  const perms = leafPermissions(space, leaf, seats);
  const scopes = store.leafScopes(space);
  const id = principalId(leaf);
  const changed = JSON.stringify(scopes[id]) !== JSON.stringify(perms);
  const bytes = JSON.stringify({ ...scopes, [id]: perms }).length;
  if (changed && bytes > maxBytes) throw new LeafScopeFullError(id, bytes, maxBytes);
  return { perms, changed };
}

import type { Profile } from "../../schemas/index.js";

/**
 * What one credential may cost the broker, in one place (docs/security.md, "What one credential
 * may cost the broker"). What nats-server 2.10 enforces, as tried against it:
 *
 * - a user JWT's `subs`: subscriptions **per connection** (the one past it is refused, "maximum
 *   subscriptions exceeded"; the connection stays);
 * - a user JWT's `payload`: bytes of one message, headers included, **per connection** (the
 *   server tells the client in its INFO; a larger PUB is "Maximum Payload Violation" and the
 *   connection is closed);
 * - a user JWT's `data`: **not enforced** (100 × 900 bytes went through on `data: 5000`), so it is
 *   left unlimited rather than promised;
 * - an account JWT's `conn`: connections of the whole account (the one past it is refused,
 *   "maximum account active connections exceeded"); its `subs` and `payload` are per connection
 *   again, and apply to every credential of the account, however it was minted;
 * - nothing counts the connections of one user: a credential may open as many as its account
 *   has left. So the mesh service counts them, as the system account, and closes each past its
 *   profile's `connections` (connection-warden.ts); the account's `conn` bounds them all together.
 * - a subscription's subject is bounded only by the control line (64 KiB, which a user JWT in
 *   CONNECT needs): 256 subscriptions of such subjects hold ~50 MiB of the server's memory. So a
 *   credential's connections, not its subscriptions, are what must stay few.
 *
 * The server's own `max_pending` (serverLimits) bounds the bytes it queues for one connection
 * that does not read; past it the connection is closed as a slow consumer.
 */

/** What a credential of one profile may do on each of its connections. */
export interface ProfileLimits {
  /** Subscriptions on one connection. */
  subs: number;
  /** Bytes of one message it publishes, headers included. */
  payload: number;
  /**
   * Connections one credential may hold at once (the mesh service closes the next,
   * connection-warden.ts); absent: only the account's bound (the operator's own credentials).
   */
  connections?: number;
}

const KiB = 1024;
const MiB = 1024 * KiB;

/**
 * Per profile, each sized from what the profile's own code holds, with headroom:
 *
 * - `agent`: one reply inbox, presence, an ack inbox, and per channel one live subscription and
 *   one pull consumer's inbox (DM, role, memberships): about 2 × channels + 6. 256 takes a seat in
 *   over 100 channels. Its largest publish is a message (the 256 KiB envelope + headers, stored
 *   up to 264 KiB) or an artifact chunk (128 KiB as base64 in a control call): 512 KiB.
 * - `reader`, `observer`: a reader's channels live and durably, as the agent; an observer takes
 *   every post and plane by wildcard and asks the mesh service. They publish only requests.
 * - `person`: an observer's wildcards, its DM inbox and one live subscription per channel it listens
 *   to; it posts and attaches files as an agent does: 512 KiB.
 * - `admin` (`cotal web`): a handful of wildcard subscriptions and one per open view; requests.
 * - `manager`: its inbox, its rail and `one`, presence, and one subscription per transcript it
 *   receives (its seats' processes are watched locally, not by NATS); it answers `ps` for up to its
 *   seats and writes seat-log records: 1 MiB.
 * - `leaf`: one leaf-node link carries the interest of every client on its host (32 seats a
 *   manager by default, each with an inbox, an ack inbox and a pull inbox per durable, and their
 *   channels, shared: about 250): 1,024, and messages of any size the hub takes. As a plain
 *   client it only probes: 4 connections. Its leaf-node links are counted by the account's
 *   `leaf`, not by `connections`.
 * - `cli`, `mesh`: the operator's own tool and the mesh service, on the mesh host (their
 *   credentials never leave it): the history scans, watches and pulls of a whole space.
 *
 * Connections: a seat's connector holds one, and each `cotal` command run with the credential one
 * while it runs; a manager, `cotal web` and `cotal console` one each; a renewal replaces one. 8
 * leaves room for that; the operator's tool and the mesh service are bounded by their accounts.
 */
export const PROFILE_LIMITS: Readonly<Record<Profile, ProfileLimits>> = {
  agent: { subs: 256, payload: 512 * KiB, connections: 8 },
  reader: { subs: 256, payload: 64 * KiB, connections: 8 },
  observer: { subs: 256, payload: 64 * KiB, connections: 8 },
  person: { subs: 256, payload: 512 * KiB, connections: 8 },
  admin: { subs: 256, payload: 64 * KiB, connections: 8 },
  manager: { subs: 256, payload: 1 * MiB, connections: 8 },
  leaf: { subs: 1_024, payload: 1 * MiB, connections: 4 },
  cli: { subs: 4_096, payload: 1 * MiB },
  mesh: { subs: 16_384, payload: 1 * MiB },
};

/** The user-JWT limits of a profile: `data` is not enforced by nats-server, so not claimed. */
export function userLimits(profile: Profile): { subs: number; payload: number; data: number } {
  const l = PROFILE_LIMITS[profile];
  return { subs: l.subs, payload: l.payload, data: -1 };
}

/** The largest per-connection bound of any profile: an account's own, which also holds credentials minted before profiles had bounds. */
const ACCOUNT_PER_CONNECTION = {
  subs: Math.max(...Object.values(PROFILE_LIMITS).map((l) => l.subs)),
  payload: Math.max(...Object.values(PROFILE_LIMITS).map((l) => l.payload)),
  data: -1,
};

/**
 * Connections of a space's clients account, every minted identity together, unless `cotal up
 * --max-connections` says otherwise: a seat holds one (its connector), a manager one, `cotal web`
 * one, each CLI command one while it runs. 256 holds eight hosts of 32 seats.
 */
export const DEFAULT_CLIENT_CONNECTIONS = 256;

/** Leaf-node connections of a clients account: one per remote host, and one more while a link is being replaced. */
export const CLIENT_LEAF_CONNECTIONS = 16;

/** Connections of a space's data account (the mesh service, a backup's or restore's one-run user) and of the system account (claims pushes). */
export const SERVICE_ACCOUNT_CONNECTIONS = 64;

/**
 * Consumers of a space's data account, every stream together: each seat binds a DM durable, one
 * per durable channel membership and its role's queue (docs/scaling.md: 1,000 seats in 5 durable
 * channels ≈ 6,000), plus the mesh service's short-lived scans. No credential creates consumers
 * itself (the clients account imports no CONSUMER.CREATE): the mesh service creates at most
 * 1 + 1 + |channels in its scope| for one identity.
 */
export const DATA_ACCOUNT_CONSUMERS = 10_000;

/** The connection limits of an account JWT (clients, data and system accounts alike; the data account adds its JetStream limits). */
export function clientAccountLimits(connections: number, leaf: number): Record<string, number | boolean> {
  return { ...ACCOUNT_PER_CONNECTION, conn: connections, leaf, imports: -1, exports: -1, wildcards: true };
}

/**
 * What only the server sets: the bytes it queues for one connection that does not read, before
 * closing it as a slow consumer (nats-server's default is 64 MiB). A client that reads keeps
 * nothing queued; 8 MiB is 30 full messages of one burst.
 */
export const SERVER_MAX_PENDING = 8 * MiB;

/** The server-wide lines of the config (operator mode). */
export function serverLimitLines(): string[] {
  return [`max_pending: ${SERVER_MAX_PENDING}`];
}

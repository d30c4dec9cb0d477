/** Wire limits. Anything over them is refused with an error that names the limit. */
export const LIMITS = {
  /** Largest encoded CotalMessage, in bytes (UTF-8 JSON). */
  maxMessageBytes: 256 * 1024,
  /** Largest number of mentions in one message. */
  maxMentions: 32,
  /** Longest message id. */
  maxIdLength: 128,
} as const;

/**
 * Presence timing (docs/SPEC.md §5). An endpoint beats every `heartbeatMs` on its beat subject, which
 * only the mesh service reads; the mesh service takes a key offline (deletes it) after
 * `livenessMs` without a beat or a write. The presence record itself is written only when it
 * changes, so watchers receive changes, never heartbeats.
 */
export const PRESENCE = {
  heartbeatMs: 2_000,
  livenessMs: 6_000,
} as const;

/** Durable consumer settings the mesh service gives every inbox, queue and membership. */
export const DELIVERY = {
  /** How long a delivered, unacked message waits before the broker redelivers it. */
  ackWaitMs: 30_000,
  /** Most unacked messages one durable hands out at a time. */
  maxAckPending: 1_000,
  /** Messages one pull asks for. */
  pullBatch: 256,
  /**
   * How long one pull waits before it is renewed, ms. The client notices a lost pull (its
   * consumer's leader died with a cluster node) after two missed idle heartbeats, half this each:
   * at nats.js's default 30 s a seat got nothing for ≈ 30 s after a node loss; at 5 s, ≈ 5 s.
   */
  pullExpiresMs: 5_000,
} as const;

/** How a send publishes: one attempt's ack wait, and how long it keeps retrying the same id. */
export const PUBLISH = {
  /** A publish not acknowledged within this is retried (same id: the broker dedupes). */
  attemptTimeoutMs: 5_000,
  /** How long a send keeps retrying an unacknowledged publish before it fails. */
  totalTimeoutMs: 30_000,
  /** Backoff between attempts: first wait, doubled each attempt, capped. */
  retryFirstMs: 100,
  retryMaxMs: 1_000,
} as const;

/**
 * Waits before each attempt to re-create a durable consumer that stopped; after the last failed
 * attempt it is reported lost.
 */
export const REESTABLISH_DELAYS_MS: readonly number[] = [0, 250, 1_000, 3_000, 10_000];

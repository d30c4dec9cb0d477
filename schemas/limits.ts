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
 * The event plane's bounds (docs/events.md "Storage"): `EVENTS_<space>` keeps a rolling window of
 * each actor's newest `framesPerActor` frames (older ones leave as new ones come), and stores no
 * frame over `maxFrameBytes` (headers included). So one actor holds at most framesPerActor ×
 * maxFrameBytes = 64 MiB, whatever it sends; the stream's own byte limit bounds them all.
 */
export const EVENT_PLANE = {
  framesPerActor: 1_000,
  /** One event is at most 8,000 characters of text (≤ 48 KB of JSON even if every one is escaped): it always fits. */
  maxFrameBytes: 64 * 1024,
} as const;

/**
 * Largest value a client may store in a bucket it writes (docs/security.md "Storage limits").
 * Each is the bucket's `max_msg_size` (the KV `max_value_size`, headers included), set and
 * reconciled by provisioning, so the broker refuses a larger write; readers also drop a larger
 * record with a log line (the schemas bound each field well inside it). A presence record near the
 * bound is ≈ 50 times a usual one.
 */
export const BUCKET_VALUE_BYTES = {
  /** One presence record (`cotal_presence_<space>`, and the record a beat carries). */
  presence: 16 * 1024,
  /** One manager heartbeat (`cotal_managers_<space>`). */
  managers: 8 * 1024,
  /** One channel configuration (`cotal_channels_<space>`; written by the operator's tool; 5,000 characters of text at most). */
  channels: 32 * 1024,
} as const;

/**
 * Most bytes of one `roster` answer (encoded rows). The roster keeps the last record of everyone
 * seen, so a space outgrows one message (the server's max payload, 1 MiB by default): the mesh
 * service answers in pages by id, and a page within one row of this size may have more.
 */
export const ROSTER_PAGE_BYTES = 512 * 1024;

/** Most bytes one roster row adds beside its presence record (id, age, flags, role). */
export const ROSTER_ROW_OVERHEAD_BYTES = 512;

/** Bounds of the free-form parts of a presence record (each also counts toward the whole record's bound). */
export const PRESENCE_FIELD_BOUNDS = {
  /** Entries of `card.meta`, and the longest key. */
  metaEntries: 32,
  metaKeyLength: 64,
  /** Channels in `channels` and in `channelModes`. */
  channels: 256,
  /** `environment`, as encoded JSON (UTF-8 bytes). */
  environmentBytes: 4 * 1024,
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
   * How long one keepalive pull waits before it is renewed, ms (in a cluster or on a leaf host;
   * a single server's quiet pulls wait quietPullExpiresMs: broker/quiet-pull.ts). The client notices a lost pull
   * (its consumer's leader died with a cluster node) after two missed idle heartbeats, half this
   * each: at nats.js's default 30 s a seat got nothing for ≈ 30 s after a node loss; at 5 s, ≈ 5 s.
   */
  pullExpiresMs: 5_000,
  /**
   * How long the broker keeps the reply route of a pull made through an import, ms: in a static
   * space a member's pulls reach the data account through the clients account's import, and the
   * data account's pull exports keep each pull's reply route this long (their
   * `response_threshold`, nats-server's default made explicit). A pull still waiting after that
   * has lost its route: what it delivers then reaches nobody until the member pulls again.
   */
  pullReplyThresholdMs: 120_000,
  /**
   * How long a quiet pull (one server: no heartbeats, broker/quiet-pull.ts) waits before it is
   * renewed, ms: well inside pullReplyThresholdMs. An idle member's only inbound traffic is the
   * `408` that ends each, one per durable per this.
   */
  quietPullExpiresMs: 90_000,
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

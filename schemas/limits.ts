/** Wire limits. Anything over them is refused with an error that names the limit. */
export const LIMITS = {
  /** Largest encoded CotalMessage, in bytes (UTF-8 JSON). */
  maxMessageBytes: 256 * 1024,
  /** Largest number of mentions in one message. */
  maxMentions: 32,
  /** Longest message id. */
  maxIdLength: 128,
} as const;

/** Presence timing (DESIGN §7): heartbeat every 2 s, offline after 6 s without one. */
export const PRESENCE = {
  heartbeatMs: 2_000,
  livenessMs: 6_000,
} as const;

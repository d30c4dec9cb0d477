import { isDeepStrictEqual } from "node:util";
import type { Attention, ChannelMode, Condition, Presence, PresenceStatus } from "../schemas/index.js";

/**
 * Live presence fields an endpoint may change. `statusSince` moves when status or activity
 * changes, `activitySince` when activity changes; a heartbeat moves neither.
 */
export interface PresencePatch {
  status?: PresenceStatus;
  /** Set (its `since` defaults to now, or stays when the code is unchanged) or clear (null). */
  condition?: Condition | null;
  activity?: string | null;
  attention?: Attention;
  /** Per channel; `normal` removes the channel from the record (absent means normal on the wire). */
  channelModes?: Record<string, ChannelMode>;
  /** Directed messages held for the agent and not yet handed over (shown on the roster). */
  unread?: number;
  /** Real progress happened now (a prompt, a tool call, a finished turn): moves `activeAt`. */
  active?: boolean;
}

/** The presence fields an endpoint keeps between heartbeats. */
export type PresenceState = Omit<Presence, "ts" | "card" | "channels" | "since">;

/**
 * Apply a presence patch at `now`. statusSince moves only when status or activity changes,
 * activitySince only when activity changes, activeAt only on `active`; a condition keeps its
 * `since` while its code stays; channel mode `normal` leaves the record (absent means normal).
 */
export function nextPresence(prev: PresenceState, patch: PresencePatch, now: number): PresenceState {
  const next: PresenceState = { ...prev, channelModes: { ...prev.channelModes } };
  const statusChanged = patch.status !== undefined && patch.status !== prev.status;
  const activityChanged = patch.activity !== undefined && (patch.activity ?? undefined) !== prev.activity;
  if (patch.status) next.status = patch.status;
  if (patch.attention) next.attention = patch.attention;
  for (const [ch, mode] of Object.entries(patch.channelModes ?? {})) {
    if (mode === "normal") delete next.channelModes[ch];
    else next.channelModes[ch] = mode;
  }
  if (patch.condition === null) delete next.condition;
  else if (patch.condition) {
    const since = patch.condition.since ?? (prev.condition?.code === patch.condition.code ? prev.condition.since : undefined) ?? now;
    next.condition = { ...patch.condition, since };
  }
  if (activityChanged) {
    if (patch.activity) {
      next.activity = patch.activity;
      next.activitySince = now;
    } else {
      delete next.activity;
      delete next.activitySince;
    }
  }
  if (statusChanged || activityChanged) next.statusSince = now;
  if (patch.unread !== undefined) next.unread = patch.unread;
  if (patch.active) next.activeAt = now;
  return next;
}

/**
 * What applying a patch did to the record: `none` (nothing to write), `progress` (only `activeAt`
 * moved, and it had moved before: a live session's tool calls, which need not cost a write each),
 * or `record` (anything else, the first progress included).
 */
export type PresenceChange = "none" | "progress" | "record";

export function presenceChange(prev: PresenceState, next: PresenceState): PresenceChange {
  if (isDeepStrictEqual(next, prev)) return "none";
  const progressOnly = prev.activeAt !== undefined && isDeepStrictEqual({ ...next, activeAt: prev.activeAt }, prev);
  return progressOnly ? "progress" : "record";
}

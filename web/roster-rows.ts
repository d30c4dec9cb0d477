import type { RosterEntry } from "../broker/index.js";

/** Mail that waited this long while its seat sat idle marks the queue stuck. */
export const STUCK_AFTER_MS = 10_000;

/** DMs waiting for one recipient: stored in the DM work queue, not yet acknowledged. */
export interface PendingMail {
  count: number;
  /** When the oldest of them was stored, Unix ms. */
  oldestAt?: number;
}

/** One row of the Roster view, as the page gets it. */
export interface RosterRow {
  id: string;
  name: string;
  kind: string;
  role?: string;
  /** The agent CLI the seat runs (`claude`, `codex`, `echo`, …), as its card says. */
  runtime?: string;
  /** A helper: the agent that answers for it (its spawner, or whom it was handed to), from the seat log, never its card. */
  spawnedBy?: string;
  status: string;
  condition?: string;
  activity?: string;
  attention?: string;
  host?: string;
  model?: string;
  unread?: number;
  seenAt?: number;
  /**
   * It is offline (its key deleted by the mesh service's liveness judge, or a goodbye written), or
   * not on the roster: what the row shows no longer holds. A record's age says nothing: records
   * are written only when they change (protocol 0.3, SPEC §5).
   */
  stale: boolean;
  /** Waiting DMs; undefined when this credential may not count them. */
  pending?: PendingMail;
  /** The stuck-queue signal: mail kept waiting while the seat was idle. */
  stuck: boolean;
}

/**
 * The stuck-queue rule: a seat that is idle (so it could take mail) while its oldest waiting DM
 * was stored more than STUCK_AFTER_MS ago, and it has been idle for at least that long too (mail
 * that arrived while it worked is not held against it). An offline seat's mail waits by design.
 */
export function isStuck(status: string, statusSince: number | undefined, pending: PendingMail | undefined, now: number): boolean {
  if (status !== "idle" || !pending || pending.count === 0 || pending.oldestAt === undefined) return false;
  const idleSince = statusSince ?? 0;
  return now - pending.oldestAt > STUCK_AFTER_MS && now - idleSince > STUCK_AFTER_MS;
}

/** Roster rows: every roster entry, plus recipients that have mail waiting but no presence record. */
export function rosterRows(entries: RosterEntry[], pending: Map<string, PendingMail> | undefined, now: number): RosterRow[] {
  const rows: RosterRow[] = entries.map((e) => {
    const p = e.presence;
    const mail = pending ? (pending.get(e.id) ?? { count: 0 }) : undefined;
    const meta = p.card.meta ?? {};
    return {
      id: e.id,
      name: e.name,
      kind: p.card.kind,
      ...(e.role ? { role: e.role } : {}),
      ...(p.card.runtime ? { runtime: p.card.runtime } : {}),
      status: e.status,
      ...(p.condition && e.status !== "offline" ? { condition: p.condition.code } : {}),
      ...(p.activity ? { activity: p.activity } : {}),
      attention: p.attention,
      ...(meta.host ? { host: meta.host } : {}),
      ...(meta.model ? { model: meta.model } : {}),
      ...(p.unread !== undefined && e.status !== "offline" ? { unread: p.unread } : {}),
      seenAt: e.seenAt,
      stale: e.status === "offline",
      ...(mail ? { pending: mail } : {}),
      stuck: isStuck(e.status, p.statusSince, mail, now),
    };
  });
  const known = new Set(rows.map((r) => r.id));
  for (const [id, mail] of pending ?? []) {
    if (known.has(id) || mail.count === 0) continue;
    rows.push({ id, name: id.split(".").slice(1).join("."), kind: "unknown", status: "not on the roster", stale: true, pending: mail, stuck: false });
  }
  return rows.sort((a, b) => a.id.localeCompare(b.id));
}

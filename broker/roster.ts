import type { KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { z } from "zod";
import {
  describeIssues,
  names,
  parsePrincipal,
  Presence,
  PrincipalId,
  ROSTER_PAGE_BYTES,
  ROSTER_ROW_OVERHEAD_BYTES,
  BUCKET_VALUE_BYTES,
  type PresenceStatus,
} from "../schemas/index.js";
import { PermissionDeniedError } from "./errors.js";
import { permissionViolation } from "./js-errors.js";
import type { WatchWatermark } from "./watch-watermark.js";
import type { Logger } from "./log.js";
import { LogSampler } from "./log-sampler.js";

/** One roster row: the last presence record and whether it is still live. */
export interface RosterEntry {
  id: string;
  /** The actor of `id` (the verified key), never the card's self-declared name. */
  name: string;
  role?: string;
  status: PresenceStatus;
  presence: Presence;
  /** Local time the last record was seen, Unix ms. */
  seenAt: number;
}

/** A presence record as carried in a roster snapshot (age instead of a clock reading). */
export interface RosterSnapshotItem {
  id: string;
  presence: Presence;
  ageMs: number;
  deleted: boolean;
  /**
   * Static meshes: the role the identity's credential holds (null: none). When a snapshot carries
   * it, the roster shows only registered roles, never the role a card claims for itself.
   */
  registeredRole?: string | null;
}

/** A snapshot item off the wire; its presence is validated by Roster.update like any record. */
const SnapshotItem = z.object({
  id: z.string(),
  presence: z.unknown(),
  ageMs: z.number().nonnegative(),
  deleted: z.boolean(),
  registeredRole: z.string().nullable().optional(),
});

/**
 * A live view of presence. A key deleted, or written as offline, reads as offline; nothing ages
 * out by the clock: records are written only when they change, and the mesh service alone
 * judges liveness from beats, deleting the key of an endpoint that stopped beating (protocol
 * 0.3). Listeners hear every change. Fed either by a KV watch (the mesh service) or by core
 * subscription plus a snapshot (endpoints, which may not create consumers).
 */
export class Roster {
  private readonly records = new Map<string, { presence: Presence; seenAt: number; deleted: boolean }>();
  private readonly everSeen = new Set<string>();
  private readonly listeners = new Set<(entries: RosterEntry[]) => void>();
  private readonly removeListeners = new Set<(id: string) => void>();
  private readonly stops: Array<() => void> = [];
  /** Registered roles (static meshes), once a snapshot said roles are verified; null: none. */
  private registeredRoles: Map<string, string | null> | undefined;
  /** Resolves once a followed view has loaded its settling snapshot (followPresence); at once for others. */
  settled: Promise<void> = Promise.resolve();

  /** Per-key warnings, sampled: the owner of a key may write it as often as it likes. */
  private readonly sampled: LogSampler;

  constructor(private readonly log: Logger) {
    this.sampled = new LogSampler(log);
  }

  /**
   * Record a presence write. Validated: a key that is not a principal id, a record that is not
   * a Presence (e.g. a publish ack that landed on the subject), or a card whose id is not its
   * key is dropped with a log line. A live write always wins (the bucket's order is the truth).
   */
  update(key: string, data: unknown, seenAt = Date.now()): void {
    const parsed = this.check(key, data);
    if (!parsed) return;
    this.records.set(key, { presence: parsed, seenAt, deleted: false });
    this.everSeen.add(key);
    this.emit();
  }

  /**
   * Merge a record learned second hand (a snapshot row, a beat): it never overrides what this
   * view already holds from a newer write (by the writer's `ts`), nor, for the same write, a
   * newer local observation such as a deletion seen live.
   */
  merge(key: string, data: unknown, seenAt: number, deleted = false): void {
    const parsed = this.check(key, data);
    if (!parsed) return;
    const cur = this.records.get(key);
    if (cur && (parsed.ts < cur.presence.ts || (parsed.ts === cur.presence.ts && seenAt <= cur.seenAt))) return;
    const changed = !cur || cur.deleted !== deleted || cur.presence.ts !== parsed.ts;
    this.records.set(key, { presence: parsed, seenAt, deleted });
    this.everSeen.add(key);
    if (changed) this.emit();
  }

  /** The record of a key, validated, or undefined (logged). */
  private check(key: string, data: unknown): Presence | undefined {
    if (!PrincipalId.safeParse(key).success) {
      this.sampled.warn(key, "presence-key", { key }, "dropped a presence record under a key that is not a principal id");
      return undefined;
    }
    const parsed = Presence.safeParse(data);
    if (!parsed.success) {
      this.sampled.warn(key, "presence-malformed", { key, issues: describeIssues(parsed.error).slice(0, 5) }, "dropped a malformed presence record");
      return undefined;
    }
    if (parsed.data.card.id !== key) {
      this.sampled.warn(key, "presence-card-id", { key, claimed: parsed.data.card.id }, "dropped a presence record whose card id disagrees with its key");
      return undefined;
    }
    return parsed.data;
  }

  /** Record a deletion (the owner's key removed: by the mesh service when its beats stopped). */
  remove(key: string, seenAt = Date.now()): void {
    const rec = this.records.get(key);
    if (rec) {
      rec.deleted = true;
      rec.seenAt = seenAt;
    }
    this.emit();
    for (const l of this.removeListeners) l(key);
  }

  /** Note fresh evidence that `key`'s current record still holds (a beat): moves its `seenAt`. */
  touch(key: string, seenAt = Date.now()): void {
    const rec = this.records.get(key);
    if (rec && !rec.deleted) rec.seenAt = seenAt;
  }

  /** The current record of a key (deleted or not), as last seen. */
  record(key: string): { presence: Presence; seenAt: number; deleted: boolean } | undefined {
    return this.records.get(key);
  }

  /** Everything known, for a snapshot reply. */
  snapshot(now = Date.now()): RosterSnapshotItem[] {
    return [...this.records.entries()].map(([id, r]) => ({ id, presence: r.presence, ageMs: Math.max(0, now - r.seenAt), deleted: r.deleted }));
  }

  /** Merge a snapshot taken elsewhere (validated item by item: a bad item is dropped, logged). */
  load(items: unknown, now = Date.now()): void {
    if (!Array.isArray(items)) {
      this.log.warn({ got: typeof items }, "dropped a roster snapshot that is not a list");
      return;
    }
    for (const raw of items) {
      const i = SnapshotItem.safeParse(raw);
      if (!i.success) {
        this.log.warn({ issues: describeIssues(i.error).slice(0, 5) }, "dropped a malformed roster snapshot item");
        continue;
      }
      if (i.data.registeredRole !== undefined) this.setRegisteredRole(i.data.id, i.data.registeredRole);
      this.merge(i.data.id, i.data.presence, now - i.data.ageMs, i.data.deleted);
    }
  }

  /** Record the role `id`'s credential holds (null: none); from then on, only registered roles show. */
  setRegisteredRole(id: string, role: string | null): void {
    (this.registeredRoles ??= new Map()).set(id, role);
    this.emit();
  }

  /** Ids seen whose registered role is not known yet (empty where roles are not verified). */
  unverifiedRoles(): string[] {
    const known = this.registeredRoles;
    return known ? [...this.records.keys()].filter((id) => !known.has(id)) : [];
  }

  /** The role to show: the registered one where roles are verified, else the card's. */
  private roleOf(id: string, card: Presence["card"]): string | undefined {
    if (!this.registeredRoles) return card.role;
    return this.registeredRoles.get(id) ?? undefined;
  }

  /** The logger this view reports dropped records on. */
  get logger(): Logger {
    return this.log;
  }

  /** Register a cleanup to run on stop(). */
  onStop(fn: () => void): void {
    this.stops.push(fn);
  }

  stop(): void {
    for (const s of this.stops.splice(0)) s();
  }

  private emit(): void {
    if (this.listeners.size === 0) return; // presence arrives often; only build views someone reads
    const entries = this.entries();
    for (const l of this.listeners) l(entries);
  }

  /**
   * How many endpoints but `except` are online in `channel` (their presence lists it): what
   * `entries()` filtered that way counts, without building and sorting every entry (a post's receipt).
   */
  onlineIn(channel: string, except: string): number {
    let n = 0;
    for (const [id, r] of this.records) if (!r.deleted && r.presence.status !== "offline" && id !== except && r.presence.channels.includes(channel)) n += 1;
    return n;
  }

  /** Everyone seen, with liveness as the records say (deleted or written offline: offline). */
  entries(_now = Date.now()): RosterEntry[] {
    return [...this.records.keys()].sort((a, b) => a.localeCompare(b)).map((id) => this.entryOf(id)!);
  }

  private entryOf(id: string): RosterEntry | undefined {
    const r = this.records.get(id);
    if (!r) return undefined;
    const status: PresenceStatus = r.deleted ? "offline" : r.presence.status;
    const role = this.roleOf(id, r.presence.card);
    return { id, name: parsePrincipal(id).actor, ...(role ? { role } : {}), status, presence: r.presence, seenAt: r.seenAt };
  }

  /** A principal id's status (deleted: offline), if it was ever seen; no entry is built (a DM's receipt). */
  statusOf(id: string): PresenceStatus | undefined {
    const r = this.records.get(id);
    if (!r) return undefined;
    return r.deleted ? "offline" : r.presence.status;
  }

  /** The entry for a principal id, if it was ever seen. */
  get(id: string): RosterEntry | undefined {
    return this.entryOf(id);
  }

  /** Whether a principal id (or name) was ever seen by this view. */
  known(idOrName: string): boolean {
    return this.everSeen.has(idOrName) || [...this.records.keys()].some((id) => parsePrincipal(id).actor === idOrName);
  }

  onChange(listener: (entries: RosterEntry[]) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Hear each key deleted (cheap: no entries are built). */
  onRemove(listener: (id: string) => void): () => void {
    this.removeListeners.add(listener);
    return () => this.removeListeners.delete(listener);
  }
}

/** Encoded size of a value as JSON, UTF-8 bytes. */
function jsonBytes(v: unknown): number {
  return Buffer.byteLength(JSON.stringify(v) ?? "", "utf8");
}

/**
 * One page of a roster snapshot: the rows whose id sorts after `after`, by id, up to
 * ROSTER_PAGE_BYTES of encoded JSON (at least one row, so a page always moves on). The roster
 * keeps the last record of everyone seen, so a whole snapshot may exceed what one message carries.
 */
export function rosterPage<T extends { id: string }>(items: T[], after?: string): T[] {
  const sorted = items.filter((i) => after === undefined || i.id > after).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const page: T[] = [];
  let bytes = 2;
  for (const item of sorted) {
    const size = jsonBytes(item) + 1;
    if (page.length > 0 && bytes + size > ROSTER_PAGE_BYTES) break;
    page.push(item);
    bytes += size;
  }
  return page;
}

/** Whether a roster page may be followed by more: it is within one row of the page size (see rosterPage). */
export function rosterPageMayContinue(page: unknown): page is Array<{ id: string }> {
  if (!Array.isArray(page) || page.length === 0) return false;
  const last: unknown = (page.at(-1) as { id?: unknown } | undefined)?.id;
  return typeof last === "string" && jsonBytes(page) > ROSTER_PAGE_BYTES - BUCKET_VALUE_BYTES.presence - ROSTER_ROW_OVERHEAD_BYTES;
}

/**
 * Load every page of a roster snapshot into `roster`. `snapshot(after)` asks for the page after
 * an id; a mesh service that does not page answers everything at once, and a page that does not
 * move past `after` ends the walk, so nothing loops.
 */
async function loadSnapshot(roster: Roster, snapshot: (after?: string) => Promise<unknown>): Promise<void> {
  let after: string | undefined;
  for (;;) {
    const page = await snapshot(after);
    roster.load(page);
    if (!rosterPageMayContinue(page)) return;
    const last = page.at(-1)!.id;
    if (after !== undefined && last <= after) return;
    after = last;
  }
}

function decodeJson(data: Uint8Array): unknown {
  try {
    return JSON.parse(new TextDecoder().decode(data));
  } catch {
    return undefined;
  }
}

/** One presence bucket entry as a watch delivers it. */
export interface PresenceWrite {
  key: string;
  /** PUT: the record (undefined when it is not JSON); DEL/PURGE: undefined. */
  value: unknown;
  deleted: boolean;
  /** When the broker stored it, epoch ms. */
  at: number;
}

/**
 * Feed a roster from a KV watch of the presence bucket (needs consumer rights: the mesh service).
 * `onWrite` hears every entry after the roster took it (the mesh service's liveness judge).
 */
export async function watchPresence(kv: KV, roster: Roster, log: Logger, onWrite?: (w: PresenceWrite) => void, watermark?: WatchWatermark): Promise<void> {
  const iter = await kv.watch();
  roster.onStop(() => iter.stop());
  let ready!: () => void;
  const initial = new Promise<void>((r) => (ready = r));
  void (async () => {
    for await (const e of iter) {
      const at = e.created.getTime();
      if (e.operation === "PUT") {
        const value = decodeJson(e.value);
        roster.update(e.key, value, at);
        onWrite?.({ key: e.key, value, deleted: false, at });
      } else {
        roster.remove(e.key, at);
        onWrite?.({ key: e.key, value: undefined, deleted: true, at });
      }
      watermark?.advance(e.revision);
      if (e.delta === 0) ready();
    }
  })().catch((err) => log.warn({ err }, "presence watch ended"));
  if ((await kv.status()).values === 0) ready();
  await Promise.race([initial, new Promise((r) => setTimeout(r, 1_000).unref())]);
}

/** How long after its first snapshot a followed roster loads one more (see followPresence). */
export const ROSTER_SETTLE_MS = 1_000;

/**
 * Feed a roster from the presence bucket's subject with a core subscription (every write is
 * published there), after loading a snapshot (page by page: `snapshot(after)`). Needs only subscribe rights on `$KV.<bucket>.>`.
 * Writes are sent only on change (no heartbeat refreshes them), so a change missed while the
 * connection was away is made up by loading a fresh snapshot after each reconnect.
 */
export async function followPresence(
  nc: NatsConnection,
  space: string,
  roster: Roster,
  snapshot: (after?: string) => Promise<unknown>,
  log: Logger = roster.logger,
): Promise<void> {
  const prefix = `$KV.${names.presenceBucket(space)}.`;
  const sub = nc.subscribe(`${prefix}>`, {
    callback: (err, msg) => {
      if (err) {
        // Terminal for the subscription: the view stops following live presence.
        const denied = permissionViolation(err);
        log.error(
          { err: denied ? new PermissionDeniedError("subscribe", denied.subject, err) : err },
          "presence subscription ended; the roster no longer follows live presence",
        );
        return;
      }
      const key = msg.subject.slice(prefix.length);
      const op = msg.headers?.get("KV-Operation");
      if (op === "DEL" || op === "PURGE") roster.remove(key);
      else roster.update(key, decodeJson(msg.data));
    },
  });
  try {
    await nc.flush();
    await loadSnapshot(roster, snapshot);
  } catch (err) {
    sub.unsubscribe();
    throw err;
  }
  roster.onStop(() => sub.unsubscribe());
  let stopped = false;
  roster.onStop(() => (stopped = true));
  // Once more, a moment later: the server routes a write to live subscribers before its stream
  // stores it, so a write routed just before we subscribed can still be unstored when the mesh
  // service reads the bucket's state for our first page (seen under load: a console missing a
  // seat's `0 unread` until its next change). A row only ever replaces an older write (merge).
  roster.settled = new Promise((resolve) => {
    const settle = setTimeout(() => {
      if (stopped) return resolve();
      loadSnapshot(roster, snapshot)
        .catch((err: unknown) => log.debug({ err }, "the roster's settling snapshot failed; live writes still follow"))
        .finally(resolve);
    }, ROSTER_SETTLE_MS);
    settle.unref();
    roster.onStop(() => {
      clearTimeout(settle);
      resolve();
    });
  });
  void (async () => {
    for await (const s of nc.status()) {
      if (stopped) return;
      if (s.type !== "reconnect") continue;
      await loadSnapshot(roster, snapshot).catch((err: unknown) =>
        log.warn({ err }, "could not reload the roster after a reconnect; changes missed meanwhile show at their next write"),
      );
    }
  })().catch((err) => log.debug({ err }, "connection status watch of the roster ended"));
}

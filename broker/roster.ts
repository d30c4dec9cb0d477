import type { KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { z } from "zod";
import { describeIssues, names, parsePrincipal, Presence, PRESENCE, PrincipalId, type PresenceStatus } from "../schemas/index.js";
import { PermissionDeniedError } from "./errors.js";
import { permissionViolation } from "./js-errors.js";
import type { Logger } from "./log.js";

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
 * A live view of presence. A key older than the liveness window, deleted, or written as
 * offline reads as offline. Listeners hear every change, including ageing out. Fed either by
 * a KV watch (the mesh service) or by core subscription plus a snapshot (endpoints, which may
 * not create consumers).
 */
export class Roster {
  private readonly records = new Map<string, { presence: Presence; seenAt: number; deleted: boolean }>();
  private readonly everSeen = new Set<string>();
  private readonly listeners = new Set<(entries: RosterEntry[]) => void>();
  private readonly stops: Array<() => void> = [];
  private lastOnline = new Set<string>();
  /** Registered roles (static meshes), once a snapshot said roles are verified; null: none. */
  private registeredRoles: Map<string, string | null> | undefined;

  constructor(
    private readonly log: Logger,
    private readonly livenessMs: number = PRESENCE.livenessMs,
  ) {
    const sweep = setInterval(() => this.checkAgeing(), 500);
    sweep.unref();
    this.stops.push(() => clearInterval(sweep));
  }

  /**
   * Record a presence write. Validated: a key that is not a principal id, a record that is not
   * a Presence (e.g. a publish ack that landed on the subject), or a card whose id is not its
   * key is dropped with a log line.
   */
  update(key: string, data: unknown, seenAt = Date.now()): void {
    if (!PrincipalId.safeParse(key).success) {
      this.log.warn({ key }, "dropped a presence record under a key that is not a principal id");
      return;
    }
    const parsed = Presence.safeParse(data);
    if (!parsed.success) {
      this.log.warn({ key, issues: describeIssues(parsed.error).slice(0, 5) }, "dropped a malformed presence record");
      return;
    }
    if (parsed.data.card.id !== key) {
      this.log.warn({ key, claimed: parsed.data.card.id }, "dropped a presence record whose card id disagrees with its key");
      return;
    }
    const current = this.records.get(key);
    if (current && current.seenAt > seenAt) return; // a stale snapshot never overrides a live write
    this.records.set(key, { presence: parsed.data, seenAt, deleted: false });
    this.everSeen.add(key);
    this.emit();
  }

  /** Record a deletion. */
  remove(key: string): void {
    const rec = this.records.get(key);
    if (rec) rec.deleted = true;
    this.emit();
  }

  /** Everything known, for a snapshot reply. */
  snapshot(now = Date.now()): RosterSnapshotItem[] {
    return [...this.records.entries()].map(([id, r]) => ({ id, presence: r.presence, ageMs: now - r.seenAt, deleted: r.deleted }));
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
      this.update(i.data.id, i.data.presence, now - i.data.ageMs);
      if (i.data.deleted) this.remove(i.data.id);
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

  private checkAgeing(): void {
    if (this.listeners.size === 0) return;
    const online = this.onlineIds();
    if (online.size !== this.lastOnline.size || [...online].some((id) => !this.lastOnline.has(id))) this.emit();
  }

  private onlineIds(): Set<string> {
    return new Set(this.entries().filter((e) => e.status !== "offline").map((e) => e.id));
  }

  private emit(): void {
    if (this.listeners.size === 0) return; // presence arrives often; only build views someone reads
    const entries = this.entries();
    this.lastOnline = new Set(entries.filter((e) => e.status !== "offline").map((e) => e.id));
    for (const l of this.listeners) l(entries);
  }

  /** Everyone seen, with liveness derived now. */
  entries(now = Date.now()): RosterEntry[] {
    return [...this.records.entries()]
      .map(([id, r]) => {
        const stale = r.deleted || now - r.seenAt > this.livenessMs;
        const status: PresenceStatus = stale ? "offline" : r.presence.status;
        return {
          id,
          name: parsePrincipal(id).actor,
          ...(this.roleOf(id, r.presence.card) ? { role: this.roleOf(id, r.presence.card)! } : {}),
          status,
          presence: r.presence,
          seenAt: r.seenAt,
        };
      })
      .sort((a, b) => a.id.localeCompare(b.id));
  }

  /** The entry for a principal id, if it was ever seen. */
  get(id: string): RosterEntry | undefined {
    return this.entries().find((e) => e.id === id);
  }

  /** Whether a principal id (or name) was ever seen by this view. */
  known(idOrName: string): boolean {
    return this.everSeen.has(idOrName) || this.entries().some((e) => e.name === idOrName);
  }

  onChange(listener: (entries: RosterEntry[]) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}

function decodeJson(data: Uint8Array): unknown {
  try {
    return JSON.parse(new TextDecoder().decode(data));
  } catch {
    return undefined;
  }
}

/** Feed a roster from a KV watch of the presence bucket (needs consumer rights: the mesh service). */
export async function watchPresence(kv: KV, roster: Roster, log: Logger): Promise<void> {
  const iter = await kv.watch();
  roster.onStop(() => iter.stop());
  let ready!: () => void;
  const initial = new Promise<void>((r) => (ready = r));
  void (async () => {
    for await (const e of iter) {
      if (e.operation === "PUT") roster.update(e.key, decodeJson(e.value), e.created.getTime());
      else roster.remove(e.key);
      if (e.delta === 0) ready();
    }
  })().catch((err) => log.warn({ err }, "presence watch ended"));
  if ((await kv.status()).values === 0) ready();
  await Promise.race([initial, new Promise((r) => setTimeout(r, 1_000).unref())]);
}

/**
 * Feed a roster from the presence bucket's subject with a core subscription (every write is
 * published there), after loading a snapshot. Needs only subscribe rights on `$KV.<bucket>.>`.
 */
export async function followPresence(
  nc: NatsConnection,
  space: string,
  roster: Roster,
  snapshot: () => Promise<unknown>,
  log: Logger = roster.logger,
): Promise<void> {
  const prefix = `$KV.${names.presenceBucket(space)}.`;
  const sub = nc.subscribe(`${prefix}>`, {
    callback: (err, msg) => {
      if (err) {
        // Terminal for the subscription: the view stops following live presence.
        const denied = permissionViolation(err);
        log.error({ err: denied ? new PermissionDeniedError("subscribe", denied.subject, err) : err }, "presence subscription ended; the roster no longer follows live presence");
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
    roster.load(await snapshot());
  } catch (err) {
    sub.unsubscribe();
    throw err;
  }
  roster.onStop(() => sub.unsubscribe());
}

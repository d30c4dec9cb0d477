import type { KV, KvEntry } from "@nats-io/kv";
import { Presence, PRESENCE, type PresenceStatus } from "../schemas/index.js";
import type { Logger } from "./log.js";

/** One roster row: the last presence record and whether it is still live. */
export interface RosterEntry {
  id: string;
  name: string;
  role?: string;
  status: PresenceStatus;
  presence: Presence;
  /** Server time of the last write, Unix ms. */
  seenAt: number;
}

/**
 * A live view of the presence bucket. A key older than the liveness window, deleted, or
 * written as offline reads as offline. Listeners hear every change, including ageing out.
 */
export class Roster {
  private readonly records = new Map<string, { presence: Presence; seenAt: number; deleted: boolean }>();
  private readonly everSeen = new Set<string>();
  private readonly listeners = new Set<(entries: RosterEntry[]) => void>();
  private stopWatch?: () => void;
  private sweep?: NodeJS.Timeout;
  private lastOnline = new Set<string>();
  /** Resolves once the initial state of the bucket was read. */
  ready!: Promise<void>;

  constructor(
    private readonly kv: KV,
    private readonly log: Logger,
    private readonly livenessMs = PRESENCE.livenessMs,
  ) {}

  async start(): Promise<void> {
    const iter = await this.kv.watch();
    let markReady!: () => void;
    this.ready = new Promise((r) => (markReady = r));
    this.stopWatch = () => iter.stop();
    void (async () => {
      // The watcher signals the end of the initial values with a null-ish delta 0 entry.
      for await (const e of iter) {
        this.apply(e);
        if (e.delta === 0) markReady();
      }
    })().catch((err) => this.log.warn({ err }, "roster watch ended"));
    // An empty bucket yields no entries: consider the roster ready after a short settle.
    const status = await this.kv.status();
    if (status.values === 0) markReady();
    this.sweep = setInterval(() => this.checkAgeing(), 500);
    this.sweep.unref();
    // Never hang a join on a quiet bucket: proceed after a short settle at most.
    await Promise.race([this.ready, new Promise((r) => setTimeout(r, 1_000).unref())]);
  }

  stop(): void {
    this.stopWatch?.();
    if (this.sweep) clearInterval(this.sweep);
  }

  private apply(e: KvEntry): void {
    if (e.operation !== "PUT") {
      const rec = this.records.get(e.key);
      if (rec) rec.deleted = true;
      this.emit();
      return;
    }
    const parsed = Presence.safeParse(safeJson(e.value));
    if (!parsed.success || parsed.data.card.id !== e.key) {
      this.log.warn({ key: e.key }, "dropped a presence record that is malformed or not its key's own");
      return;
    }
    this.records.set(e.key, { presence: parsed.data, seenAt: e.created.getTime(), deleted: false });
    this.everSeen.add(e.key);
    this.emit();
  }

  private checkAgeing(): void {
    const online = new Set(this.entries().filter((e) => e.status !== "offline").map((e) => e.id));
    if (online.size !== this.lastOnline.size || [...online].some((id) => !this.lastOnline.has(id))) this.emit();
  }

  private emit(): void {
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
          name: r.presence.card.name,
          ...(r.presence.card.role ? { role: r.presence.card.role } : {}),
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

  /** Whether a principal id was ever seen by this view. */
  known(id: string): boolean {
    return this.everSeen.has(id);
  }

  onChange(listener: (entries: RosterEntry[]) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}

function safeJson(data: Uint8Array): unknown {
  try {
    return JSON.parse(new TextDecoder().decode(data));
  } catch {
    return undefined;
  }
}

import { hostname } from "node:os";
import type { KV } from "@nats-io/kv";
import type { RuntimeHost } from "../runtime/index.js";
import { runtimeNamed } from "../runtimes/index.js";
import { heartbeatOf } from "./heartbeat.js";
import { readAuthOnScreen, wakeIfDue, type LiveSeat } from "./live-seat.js";
import type { ManagerOptions } from "./manager-options.js";
import { adapterOf } from "./runtime-checks.js";
import { holdsName, type SeatRecord } from "./seat-table.js";

/** What the heartbeat needs of the manager. */
export interface HeartbeatContext {
  readonly o: ManagerOptions;
  /** The space's managers bucket: the heartbeat is this instance's key in it. */
  readonly managers: KV;
  readonly seats: ReadonlyMap<string, SeatRecord>;
  /** The seats this manager runs: each beat wakes those due and reads their screens. */
  readonly live: ReadonlyMap<string, LiveSeat>;
  /** Where each runtime this manager can start is (runtimes/). */
  readonly hosts: ReadonlyMap<string, RuntimeHost>;
}

/**
 * The manager's heartbeat (every `heartbeatMs`, default 3 s): its status in the managers bucket,
 * which `cotal ps` lists managers from (heartbeat.ts: what observers may read of it); on each beat a
 * joined seat idle with mail is woken, and a working one's screen read for refused credentials.
 */
export class ManagerHeartbeat {
  private timer?: NodeJS.Timeout;
  private failing = false;
  private readonly startedAt = Date.now();

  constructor(private readonly c: HeartbeatContext) {}

  /** Beat once now, then every `heartbeatMs`. */
  async start(): Promise<void> {
    await this.beat();
    this.timer = setInterval(() => void this.beat(), this.c.o.heartbeatMs ?? 3_000);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  /** Take this manager out of the managers bucket (its stop: `cotal ps` no longer lists it). */
  async withdraw(): Promise<void> {
    await this.c.managers.delete(this.c.o.instance).catch(() => undefined);
  }

  /** The manager's status (the `status` command): its seats, its limit and each runtime's readiness. */
  status() {
    return {
      instance: this.c.o.instance,
      host: hostname(),
      pid: process.pid,
      seats: [...this.c.seats.values()].filter((r) => r.manager === this.c.o.instance && holdsName(r)).length,
      maxSeats: this.c.o.maxSeats ?? 32,
      startedAt: this.startedAt,
      runtimes: [...this.c.hosts].flatMap(([name, host]) => {
        const adapter = runtimeNamed(name);
        if (!adapter) return [];
        const { ready, summary, problem, remedy, detail } = adapter.auth(host);
        return [{ name, ready, config: summary, ...(problem ? { problem } : {}), ...(remedy ? { remedy } : {}), ...(detail ? { auth: detail } : {}) }];
      }),
    };
  }

  private async beat(): Promise<void> {
    for (const [seat, l] of this.c.live) {
      const r = this.c.seats.get(seat);
      if (r?.state === "joined" && l.lastPresence)
        void wakeIfDue(seat, l, adapterOf(r), l.lastPresence, this.c.o.log).catch((err) => this.c.o.log.warn({ err, seat }, "wake failed"));
      if (r?.state === "joined")
        void readAuthOnScreen(seat, l, adapterOf(r), this.c.o.log).catch((err) => this.c.o.log.warn({ err, seat }, "reading a seat's screen failed"));
    }
    const status = this.status();
    try {
      await this.c.managers.put(this.c.o.instance, JSON.stringify({ ...heartbeatOf(status), ts: Date.now() }));
      if (this.failing) this.c.o.log.info("manager heartbeat works again");
      this.failing = false;
    } catch (err) {
      // Once per outage, not every beat.
      if (!this.failing) this.c.o.log.warn({ err }, "manager heartbeat failed: `cotal ps` will not list this manager until it works");
      this.failing = true;
    }
  }
}

import type { NatsConnection } from "@nats-io/transport-node";
import type { LiveSeat } from "./live-seat.js";
import type { SeatTableAccess } from "./manager-context.js";
import type { ManagerOptions } from "./manager-options.js";
import { retireSeatFiles } from "./seat-launcher.js";
import { holdsName, type SeatRecord } from "./seat-table.js";
import { seatName } from "./seat-views.js";

/** What retiring seats needs of the manager. */
export interface RetirementContext extends SeatTableAccess {
  /** Where a retired incarnation's credential is revoked. */
  readonly nc: NatsConnection;
  readonly o: ManagerOptions;
  /** The seats this manager runs: a seat retired while running is stopped first. */
  readonly live: Map<string, LiveSeat>;
}

/**
 * The end of a seat's incarnation: its process stopped, its credential revoked, its folder removed,
 * `retired` in the seat log, and its helpers retired with it (docs/manager.md, Helpers).
 */
export class SeatRetirement {
  /**
   * Set while the log is replayed at start: a spawner retired then leaves its helpers (which may not
   * be adopted yet, so could not be stopped) to retireOrphans(), which runs once every seat is.
   */
  private rebuilding = false;

  constructor(private readonly c: RetirementContext) {}

  /** Run `f` (the replay at start) with a retired spawner's helpers left to retireOrphans(). */
  async whileRebuilding(f: () => Promise<void>): Promise<void> {
    this.rebuilding = true;
    try {
      await f();
    } finally {
      this.rebuilding = false;
    }
  }

  /** Retire a seat's incarnation (its credential revoked, its folder removed), then its helpers with it. */
  async retire(seat: string, reason: string): Promise<number> {
    const r = this.c.seats.get(seat)!;
    try {
      return await retireSeatFiles(this.c.nc, this.c.o, seatName(seat));
    } finally {
      await this.c.append(seat, { type: "retired", seat, uid: r.uid, epoch: r.epoch, ts: Date.now(), reason });
      if (!this.rebuilding) await this.retireHelpersOf(seat, r.uid);
    }
  }

  /** Stop a seat's process if it runs, and retire its incarnation (its helpers with it). */
  async stopAndRetire(seat: string, r: SeatRecord, reason: string) {
    const l = this.c.live.get(seat);
    let stopped = false;
    if (l) {
      l.stopping = true;
      const exit = await l.proc.stop();
      this.c.live.delete(seat);
      stopped = true;
      await this.c.appendExited(seat, r, exit, undefined, reason);
    }
    const revoked = await this.retire(seat, reason);
    return { seat, uid: r.uid, stopped, revoked };
  }

  /**
   * After a restart: a helper whose spawner, a seat of this manager, was retired (or replaced by a new
   * incarnation) while its retirement was under way goes now.
   */
  async retireOrphans(): Promise<void> {
    for (const h of [...this.c.seats.values()]) {
      if (h.manager !== this.c.o.instance || !holdsName(h) || !h.spawnedBy || h.spawnerUid === undefined) continue;
      const s = this.c.seats.get(h.spawnedBy);
      if (s && s.uid === h.spawnerUid && holdsName(s)) continue;
      await this.stopAndRetire(h.seat, h, `retired with its spawner ${h.spawnedBy}`).catch((err: unknown) =>
        this.c.o.log.error({ err, seat: h.seat }, "retiring a helper whose spawner is gone failed"),
      );
    }
  }

  /**
   * A spawner retired takes its helpers with it (docs/manager.md, Helpers): every seat of this
   * manager that answers to it (to that incarnation, when it is a seat here) and was not handed over.
   */
  private async retireHelpersOf(spawner: string, uid: string): Promise<void> {
    for (const h of [...this.c.seats.values()]) {
      if (h.manager !== this.c.o.instance || !holdsName(h) || h.spawnedBy !== spawner) continue;
      if (h.spawnerUid !== undefined && h.spawnerUid !== uid) continue;
      await this.stopAndRetire(h.seat, h, `retired with its spawner ${spawner}`).catch((err: unknown) =>
        this.c.o.log.error({ err, seat: h.seat, spawner }, "retiring a helper with its spawner failed"),
      );
    }
  }
}

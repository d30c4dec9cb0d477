import { join } from "node:path";
import { fixOff, FIX_OFF_ENV } from "../broker/index.js";
import type { LiveSeat } from "./live-seat.js";
import type { SeatTableAccess, Serial } from "./manager-context.js";
import type { ManagerOptions } from "./manager-options.js";
import { adoptSeatProcess, type SeatProcess } from "./process-host.js";
import { proveSeatProcess, seatFolderProblem, type SeatProof } from "./seat-adoption.js";
import { seatDir, type SeatFiles } from "./seat-launcher.js";
import type { SeatHistory, SeatLog } from "./seat-log.js";
import type { SeatRetirement } from "./seat-retirement.js";
import type { SeatSupervisor } from "./seat-supervisor.js";
import { incarnationPast, type SeatRecord } from "./seat-table.js";
import { seatName } from "./seat-views.js";
import type { TmuxServer } from "./tmux-host.js";

/** What taking up the seats of the log at start needs of the manager. */
export interface RecoveryContext extends SeatTableAccess {
  readonly o: ManagerOptions;
  readonly seatLog: Pick<SeatLog, "replay">;
  /** Fold a seat's history into the table (its projection, and this manager's fence token on it). */
  learn(h: SeatHistory): SeatRecord | undefined;
  /** The manager's own tmux server, where a tmux seat's window is found again. */
  readonly tmux: TmuxServer;
  serial: Serial;
  readonly supervisor: Pick<SeatSupervisor, "watch" | "onExit" | "afterExit" | "verdictOf" | "windowOf">;
  readonly retirement: Pick<SeatRetirement, "retire" | "whileRebuilding">;
}

/**
 * A manager's start: the seats the seat log says this instance ran are adopted when their process
 * still runs and proves to be its own, started again or retired otherwise (docs/manager.md).
 */
export class SeatRecovery {
  constructor(private readonly c: RecoveryContext) {}

  /**
   * Replay the log; adopt this instance's seats whose process still runs and proves to be its own
   * (seat-adoption.ts), relaunch the rest; one whose folder is gone is retired, naming it. A seat
   * the log leaves at `exited` (its manager died before restarting or retiring it) is judged as if
   * its exit had just been seen.
   */
  async rebuild(): Promise<void> {
    await this.c.retirement.whileRebuilding(() => this.adoptOrRelaunch());
  }

  private async adoptOrRelaunch(): Promise<void> {
    const histories = await this.c.seatLog.replay();
    for (const h of histories.values()) this.c.learn(h);
    for (const r of this.c.seats.values()) {
      if (r.manager !== this.c.o.instance || !["launched", "joined", "requested", "exited"].includes(r.state)) continue;
      const files = this.filesOf(r);
      const past = incarnationPast(histories.get(r.seat)!, r);
      if (r.state === "exited") {
        await this.c.serial(() => this.takeUpExited(r, files, past));
        continue;
      }
      // The policy window counts the restarts the log shows, not only this process's.
      const restartsAt = past.restartsAt.filter((t) => Date.now() - t < this.c.supervisor.windowOf(r));
      const proof: SeatProof = fixOff("adoption", this.c.o.log)
        ? { kind: "not-ours", why: `adoption is switched off (${FIX_OFF_ENV})`, running: true }
        : await proveSeatProcess(r, files, () => this.c.tmux.panePid(seatName(r.seat)));
      if (proof.kind === "not-ours" && proof.running)
        this.c.o.log.warn({ seat: r.seat, pid: r.pid, why: proof.why }, "a recorded seat's process is not this manager's: not adopted");
      const proc =
        proof.kind !== "ours" || r.pid === undefined || !r.startTime
          ? undefined
          : r.terminal === "tmux"
            ? this.c.tmux.adopt(seatName(r.seat), r.pid, r.startTime)
            : adoptSeatProcess(r.pid, r.startTime, files.log);
      if (proc) {
        this.c.o.log.info({ seat: r.seat, pid: r.pid }, "re-adopted a running seat");
        this.c.supervisor.watch(r.seat, {
          proc,
          files,
          stopping: false,
          restartsAt,
          ...(r.terminal === "tmux" ? { terminal: this.c.tmux.terminal(seatName(r.seat)) } : {}),
          ...(r.state === "joined" ? { joinedEpoch: r.epoch } : {}),
        });
      } else {
        const why = proof.kind === "not-ours" ? proof.why : "the process was gone when the manager restarted";
        const lost = seatFolderProblem(files);
        await this.c.serial(async () => {
          if (!lost) return this.c.supervisor.onExit(r.seat, { proc: deadProcess(), files, stopping: false, restartsAt }, { code: null, signal: null }, why);
          // Nothing to start it again from (a restored seat log, a removed folder): recorded as failed, never launched.
          this.c.o.log.warn({ seat: r.seat, problem: lost }, "a recorded seat cannot be started again: retired");
          const reason = lostFolder(lost);
          await this.c.appendExited(r.seat, r, { code: null, signal: null }, why, reason);
          await this.c.retirement.retire(r.seat, reason);
        });
      }
    }
  }

  /**
   * A seat its previous manager recorded as exited and died before restarting or retiring: a seat
   * it was retiring (a stop, a failed start, a crash loop) is retired with that reason; any other
   * goes through the restart policy as of its exit, counting the restarts the log shows.
   */
  private async takeUpExited(r: SeatRecord, files: SeatFiles, past: { restartsAt: number[]; joined: boolean }): Promise<void> {
    const lost = r.retiring === undefined ? seatFolderProblem(files) : undefined;
    this.c.o.log.info({ seat: r.seat, retiring: r.retiring, lost }, "a seat was left exited by the previous manager: taking it up");
    if (r.retiring !== undefined || lost) {
      await this.c.retirement.retire(r.seat, r.retiring ?? lostFolder(lost!));
      return;
    }
    const exit = r.exit ?? { code: null, signal: null };
    const l: LiveSeat = { proc: deadProcess(), files, stopping: false, restartsAt: past.restartsAt, ...(past.joined ? { joinedEpoch: r.epoch } : {}) };
    await this.c.supervisor.afterExit(r.seat, l, exit, this.c.supervisor.verdictOf(r, l, exit, r.exit?.output, r.since));
  }

  /** Where the launcher put the files of a seat's incarnation (seat-launcher.ts). */
  private filesOf(r: SeatRecord): SeatFiles {
    const dir = seatDir(this.c.o.stateDir, seatName(r.seat));
    return { dir, material: join(dir, "launch.json"), log: join(dir, "seat.log"), creds: join(dir, `${r.uid}.creds`) };
  }
}

/** Why a seat found without its folder is retired (seatFolderProblem's `problem`). */
function lostFolder(problem: string): string {
  return `failed: ${problem} when the manager started, so it could not be started again`;
}

/** A process that is already gone (for a seat found dead at restart). */
function deadProcess(): SeatProcess {
  const exited = Promise.resolve({ code: null, signal: null });
  return { pid: -1, startTime: undefined, exited, stop: () => exited };
}

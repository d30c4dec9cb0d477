import { fixOff, FIX_OFF_ENV } from "../broker/index.js";
import type { RuntimeAdapter, RuntimeHost } from "../runtime/index.js";
import { loadAgentFile, runtimeNamed } from "../runtimes/index.js";
import { PersonaChangedError } from "./errors.js";
import type { LiveSeat } from "./live-seat.js";
import type { SeatTableAccess, Serial } from "./manager-context.js";
import type { ManagerOptions } from "./manager-options.js";
import { logTailOf, type SeatExit } from "./process-host.js";
import { deliverPrompt } from "./prompt-delivery.js";
import { describeExit, exitVerdict, type ExitStatus, type ExitVerdict } from "./restart-policy.js";
import { adapterOf } from "./runtime-checks.js";
import { startFailureRemedy } from "./seat-failure.js";
import { launchSeat, type SeatFiles } from "./seat-launcher.js";
import { awaitInputScreen, startRuntimeSeat, UnexpectedScreenError } from "./seat-start.js";
import { holdsName, type SeatRecord } from "./seat-table.js";
import { seatName } from "./seat-views.js";
import type { TmuxServer } from "./tmux-host.js";

/** What supervising seats needs of the manager. */
export interface SupervisorContext extends SeatTableAccess {
  readonly o: ManagerOptions;
  /** The seats this manager runs, by seat: a seat started is added, one that ended removed. */
  readonly live: Map<string, LiveSeat>;
  /** Where each runtime this manager can start is (runtimes/). */
  readonly hosts: ReadonlyMap<string, RuntimeHost>;
  /** The manager's own tmux server. */
  readonly tmux: TmuxServer;
  serial: Serial;
  /** True once the manager stopped: it writes nothing more (a successor may own the log now). */
  stopped(): boolean;
  /** Retire a seat's incarnation, its helpers with it (seat-retirement.ts). */
  retire(seat: string, reason: string): Promise<number>;
}

/**
 * A live seat's life under its manager: started (and, in a terminal, brought to its input screen
 * and woken for its opening prompt), watched until its process ends, then restarted or retired as
 * the restart policy says (restart-policy.ts).
 */
export class SeatSupervisor {
  constructor(private readonly c: SupervisorContext) {}

  /**
   * Start incarnation `epoch` of a seat the table holds: an agent CLI in a terminal this manager owns
   * (then wait for its input screen), anything else as a plain process; `launched` in the log.
   */
  async start(
    seat: string,
    files: SeatFiles,
    epoch: number,
    past: Pick<LiveSeat, "restartsAt" | "rejoining">,
    opening = false,
    carriedFile?: string,
  ): Promise<void> {
    const { restartsAt, rejoining } = past;
    const r = this.c.seats.get(seat)!;
    const adapter = runtimeNamed(r.agent);
    const host = adapter ? this.c.hosts.get(adapter.name) : undefined;
    if (adapter && host) {
      const cwd = r.spec.cwd ?? process.cwd();
      const agentFile = r.persona ? loadAgentFile(cwd, r.persona) : undefined;
      if (r.spawnedBy && agentFile && agentFile.digest !== r.spec.personaDigest)
        throw new PersonaChangedError(seat, r.persona!, r.spawnedBy, r.spec.personaDigest !== undefined);
      const kind = r.spec.terminal === "pty" ? "pty" : "tmux";
      const term = kind === "pty" ? ({ pty: true } as const) : { tmux: this.c.tmux };
      const request = {
        name: seatName(seat),
        space: this.c.o.space,
        cwd,
        model: r.spec.model,
        resume: r.spec.carried ? { ...r.spec.carried, file: carriedFile } : undefined,
      };
      const fm = agentFile?.frontmatter;
      const { proc, terminal, permissionMode } = await startRuntimeSeat(adapter, host, term, files, {
        ...request,
        persona: agentFile?.persona,
        agent: fm?.agent,
        allowedTools: fm?.allowedTools ?? [],
        launchOptions: fm?.launchOptions ?? {},
        posture: r.spec.posture,
      });
      await this.c.append(seat, {
        type: "launched",
        seat,
        uid: r.uid,
        epoch,
        ts: Date.now(),
        terminal: kind,
        pid: proc.pid,
        ...(proc.startTime ? { startTime: proc.startTime } : {}),
        ...(permissionMode ? { permissionMode } : {}),
      });
      const l: LiveSeat = { proc, files, stopping: false, restartsAt, rejoining, terminal };
      this.watch(seat, l);
      void this.untilReady(seat, l, adapter, opening);
      return;
    }
    const proc = launchSeat(this.c.o, r.agent, files);
    await this.c.append(seat, {
      type: "launched",
      seat,
      uid: r.uid,
      epoch,
      ts: Date.now(),
      terminal: "process",
      ...(proc.pid > 0 ? { pid: proc.pid } : {}),
      ...(proc.startTime ? { startTime: proc.startTime } : {}),
    });
    this.watch(seat, { proc, files, stopping: false, restartsAt, rejoining });
  }

  /**
   * An interactive seat must reach its input screen unattended: on a screen it does not expect
   * it is failed and retired, naming the screen. Once ready, a seat with an opening prompt (stored
   * as its mail) is woken, so its first turn's hook hands the prompt over.
   */
  private async untilReady(seat: string, l: LiveSeat, adapter: RuntimeAdapter, opening: boolean): Promise<void> {
    try {
      await awaitInputScreen(
        l.terminal!,
        l.proc,
        adapter.classifyScreen,
        this.c.hosts.get(adapter.name)?.screenTimeoutMs ?? adapter.screenTimeoutMs,
        (screen) => (l.lastScreen = screen),
      );
      if (opening && !this.c.stopped()) await this.wakeForOpening(seat, l, adapter);
    } catch (err) {
      if (this.c.stopped() || this.c.live.get(seat) !== l || l.stopping) return;
      const shown = err instanceof UnexpectedScreenError ? err.screen || (l.lastScreen ?? "") : "";
      const remedy = startFailureRemedy(shown, adapter);
      const why = `${err instanceof UnexpectedScreenError ? err.message : `its screen could not be read: ${(err as Error).message}`}${remedy ? `. ${remedy}` : ""}`;
      this.c.o.log.warn({ seat, why, screen: shown.trimEnd().split("\n").slice(-20).join("\n") }, "a seat did not reach its input screen: failed");
      l.stopping = true;
      await this.c
        .serial(async () => {
          const exit = await l.proc.stop(2_000);
          this.c.live.delete(seat);
          const r = this.c.seats.get(seat);
          if (!r || !holdsName(r)) return;
          const output = shown.trim() ? shown.trimEnd().split("\n").slice(-20).join("\n") : undefined;
          await this.c.appendExited(seat, r, exit, output, `failed: ${why}`);
          await this.c.retire(seat, `failed: ${why}`);
        })
        .catch((e: unknown) => this.c.o.log.error({ err: e, seat }, "failing a seat that did not start failed"));
    }
  }

  /**
   * Type the runtime's fixed wake prompt into a seat whose opening prompt waits as mail, and see it
   * taken (prompt-delivery.ts); one still not taken is logged with the screen. The wake of held
   * mail (wakeIfDue) waits meanwhile: two wakes typed at once would start two turns.
   */
  private async wakeForOpening(seat: string, l: LiveSeat, adapter: RuntimeAdapter): Promise<void> {
    l.wokenAt = Date.now();
    l.waking = true;
    try {
      const outcome = await deliverPrompt(adapter.wakePrompt, {
        terminal: l.terminal!,
        submitDelayMs: adapter.submitDelayMs,
        classify: adapter.classifyScreen,
        retype: adapter.capabilities.mailHook,
        taken: (typedAt) => {
          const p = l.lastPresence;
          return p !== undefined && ((p.activeAt ?? 0) >= typedAt || p.status === "working" || p.status === "waiting");
        },
        onRetry: (what) =>
          this.c.o.log.warn(
            { seat, what },
            what === "enter"
              ? "the wake for the opening prompt was not taken: pressing Enter again"
              : "the wake for the opening prompt was not taken: typing it again",
          ),
      });
      if (!outcome.taken && !this.c.stopped() && !l.stopping)
        this.c.o.log.warn(
          { seat, why: outcome.why, screen: outcome.screen.trimEnd().split("\n").slice(-15).join("\n") },
          "the wake for the opening prompt was not taken",
        );
    } finally {
      l.waking = false;
    }
  }

  /** Keep a seat started or adopted as live, and handle its exit when it ends on its own (not stopped on purpose). */
  watch(seat: string, l: LiveSeat): void {
    this.c.live.set(seat, l);
    void l.proc.exited
      .then((exit) => {
        if (this.c.stopped() || this.c.live.get(seat) !== l || l.stopping) return;
        return this.c.serial(() => this.onExit(seat, l, exit));
      })
      .catch((err) => this.c.o.log.error({ err, seat }, "seat exit handling failed"));
  }

  /** A seat's process ended on its own: record it, then restart, or retire a seat that never joined or loops. */
  async onExit(seat: string, l: LiveSeat, exit: SeatExit, why?: string): Promise<void> {
    this.c.live.delete(seat);
    const r = this.c.seats.get(seat);
    if (!r || !holdsName(r)) return;
    const output = why ?? (await this.lastOutput(r, l));
    const verdict = this.verdictOf(r, l, exit, output, Date.now());
    await this.c.appendExited(seat, r, exit, output, verdict.retire);
    await this.afterExit(seat, l, exit, verdict);
  }

  /** The restart policy's verdict on one exit of seat `r` (restart-policy.ts). */
  verdictOf(r: SeatRecord, l: LiveSeat, exit: ExitStatus, output: string | undefined, exitAt: number): ExitVerdict {
    const screen = r.terminal === "tmux" && output ? adapterOf(r).classifyScreen(output) : undefined;
    const verdict = exitVerdict({
      exit,
      exitAt,
      // A restart (epoch > 0) follows a join: an incarnation started again that cannot join (a node
      // of the cluster down, its presence write timing out) counts against the restart policy like
      // any crash, not as a spawn that failed; the fault suite found such seats retired for good.
      joined: r.state === "joined" || l.joinedEpoch !== undefined || r.epoch > 0,
      joinedNow: r.state === "joined" || l.joinedEpoch !== undefined,
      rejoining: l.rejoining,
      restartsAt: l.restartsAt,
      restarts: r.spec.restarts ?? this.c.o.restarts ?? 3,
      windowMs: this.windowOf(r),
      blockedBy: screen?.kind === "blocked" ? screen.name : undefined,
    });
    if (verdict.retire === undefined && fixOff("restart", this.c.o.log))
      return { ...verdict, retire: `exited: ${describeExit(exit)} (restarts are switched off, ${FIX_OFF_ENV})` };
    return verdict;
  }

  /** An exit recorded: retire the seat as the verdict says, or restart it. */
  async afterExit(seat: string, l: LiveSeat, exit: ExitStatus, verdict: ExitVerdict): Promise<void> {
    if (verdict.retire !== undefined) {
      await this.c.retire(seat, verdict.retire);
      return;
    }
    const r = this.c.seats.get(seat)!;
    const rr = await this.c.append(seat, { type: "restarted", seat, uid: r.uid, epoch: r.epoch + 1, ts: Date.now(), reason: describeExit(exit) });
    const again = async () => {
      try {
        await this.start(seat, l.files, rr.epoch, { restartsAt: verdict.recent, rejoining: verdict.rejoining });
      } catch (err) {
        // Nothing to start it again from (a helper's agent file changed, an agent file gone): retired, saying why.
        await this.c.retire(seat, `could not be started again: ${(err as Error).message}`);
      }
    };
    if (!verdict.pauseMs) return again();
    // Outside the serial queue: the manager answers meanwhile. A stop or a retirement meanwhile wins.
    this.c.o.log.warn(
      { seat, pauseMs: verdict.pauseMs, tries: verdict.rejoining?.tries },
      "a restarted seat exited before it joined; starting it again after a pause",
    );
    setTimeout(() => {
      void this.c
        .serial(async () => {
          const now = this.c.seats.get(seat);
          if (this.c.stopped() || this.c.live.has(seat) || now?.epoch !== rr.epoch || now.state !== "requested") return;
          await again();
        })
        .catch((err) => this.c.o.log.error({ err, seat }, "a paused restart failed"));
    }, verdict.pauseMs).unref();
  }

  /** What a seat showed last: its log's tail, or its terminal's last screen (the window is kept until read, then closed). */
  private async lastOutput(r: SeatRecord, l: LiveSeat): Promise<string> {
    if (!l.terminal) return logTailOf(l.files.log);
    let screen = (await l.terminal.screen(100)).trimEnd();
    await l.terminal.close();
    // An exiting TUI may leave a blank screen (it restores the main one): then what it showed last.
    const { classifyScreen } = adapterOf(r);
    if (classifyScreen(screen).kind !== "blocked" && l.lastScreen && classifyScreen(l.lastScreen).kind === "blocked") screen = l.lastScreen.trimEnd();
    return screen.split("\n").slice(-30).join("\n");
  }

  /** The seat's restart window, ms: its own, else the manager's (default 60 s). */
  windowOf(r: SeatRecord): number {
    return r.spec.windowMs ?? this.c.o.windowMs ?? 60_000;
  }
}

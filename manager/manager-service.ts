import { statSync } from "node:fs";
import { hostname } from "node:os";
import { isAbsolute, join } from "node:path";
import { Kvm, type KV } from "@nats-io/kv";
import { jetstream } from "@nats-io/jetstream";
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import {
  MANAGER_COMMANDS,
  SeatEvent,
  names,
  patterns,
  type Principal,
  type SeatAgent,
  type SeatRuntime,
  type SeatView,
  type TableParsedArgs,
} from "../schemas/index.js";
import { JS_OPTIONS, serveControl, SERVICE_PRINCIPALS, type Logger } from "../broker/index.js";
import { SeatRefusedError, StaleSeatLogError } from "./errors.js";
import { newLifecycleUid } from "./lifecycle-uid.js";
import { adoptSeatProcess, logTailOf, type SeatExit, type SeatProcess } from "./process-runtime.js";
import { launchSeat, prepareSeat, retireSeatFiles, seatDir, type LauncherOptions, type SeatFiles } from "./seat-launcher.js";
import { SeatLog } from "./seat-log.js";
import { classifyScreen, loadAgentFile } from "../claude/index.js";
import { awaitInputScreen, startClaudeSeat, UnexpectedScreenError, type ClaudeSeatOptions } from "./claude-seat.js";
import { checkScript } from "./pty-runtime.js";
import type { SeatTerminal } from "./seat-terminal.js";
import { TmuxServer } from "./tmux-runtime.js";
import { RunService } from "./runs.js";
import { TranscriptDesk, type StagedTranscript } from "./transcript-carry.js";
import type { BudgetCaps } from "./budget.js";
import { applyEvent, holdsName, projectSeat, type SeatRecord } from "./seat-table.js";

type Args<C extends keyof typeof MANAGER_COMMANDS> = TableParsedArgs<typeof MANAGER_COMMANDS, C>;

export interface ManagerOptions extends LauncherOptions {
  /** This manager's instance id (stable across restarts: kept in its state dir by the CLI). */
  instance: string;
  /** The connection JetStream requests go over (see broker jetStreamConnection). */
  jsConnection: NatsConnection;
  maxSeats?: number;
  /** How long a launched seat has to appear in presence before it is reported `uncertain` (default 30 s). */
  readinessMs?: number;
  /** Restarts allowed within `windowMs` before a crash-looping seat is retired (default 3 in 60 s). */
  restarts?: number;
  windowMs?: number;
  heartbeatMs?: number;
  /** What Claude seats run (absent: this manager refuses claude seats, saying why). */
  claude?: ClaudeSeatOptions;
  /** Budget caps for runs (default: COTAL_DAILY_BUDGET_USD / COTAL_TASK_BUDGET_USD from the environment). */
  budget?: BudgetCaps;
  log: Logger;
}

/** The presence fields the manager reads (a seat's own record; only its lifecycle uid is trusted as an id). */
interface SeatPresence {
  status?: string;
  lifecycleUid?: string;
  unread?: number;
  attention?: string;
}

/** What the manager types into an idle seat that holds mail: the turn it starts hands the mail over. */
export const WAKE_PROMPT = "You have new Cotal mail. Read it and act on it.";
const WAKE_EVERY_MS = 15_000;

interface Live {
  /** Claude seats: the terminal the manager reads and types into. */
  terminal?: SeatTerminal;
  /** The last non-blank screen seen while it started (a TUI's exit may blank it). */
  lastScreen?: string;
  /** When the manager last typed a wake prompt (unset once the seat worked). */
  wokenAt?: number | undefined;
  waking?: boolean;
  /**
   * The seat's presence as last written. Records are written only when they change (protocol
   * 0.3), so a wake that could not happen yet (the screen not ready) is tried again from this on
   * the manager's own heartbeat rather than on the next presence write.
   */
  lastPresence?: SeatPresence;
  proc: SeatProcess;
  files: SeatFiles;
  joinedEpoch?: number;
  stopping: boolean;
  restartsAt: number[];
}

/**
 * The manager of one host (docs/manager.md): serves spawn, stop, ps and status on the control rail
 * (any manager, or this instance by id), keeps every seat's life in the seat log, supervises the
 * processes it started, and re-adopts them after its own restart.
 */
export class ManagerService {
  private readonly seats = new Map<string, SeatRecord>();
  private readonly live = new Map<string, Live>();
  private readonly subs: Subscription[] = [];
  private heartbeat?: NodeJS.Timeout;
  private beatFailing = false;
  /** Set by stop(): this instance writes nothing more (a successor may own the log now). */
  private stopped = false;
  private readonly startedAt = Date.now();
  /** Serialises changes to the table and the log (one writer per seat at a time). */
  private queue: Promise<unknown> = Promise.resolve();
  /** The manager's own tmux server: one session per space, a window per seat. */
  private readonly tmux: TmuxServer;
  /** One-shot runs and their budgets (manager/runs.ts). */
  private runs?: RunService;
  /** Carried transcripts staged here and their one-time claims (manager/transcript-carry.ts). */
  private readonly carry: TranscriptDesk;

  private constructor(
    private readonly nc: NatsConnection,
    private readonly o: ManagerOptions,
    private readonly seatLog: SeatLog,
    private readonly managers: KV,
  ) {
    this.tmux = new TmuxServer(join(o.stateDir, "tmux.sock"), `cotal-${o.space}`);
    this.carry = new TranscriptDesk({
      nc,
      space: o.space,
      instance: o.instance,
      stateDir: o.stateDir,
      caller: o.caller ?? SERVICE_PRINCIPALS.cli,
      log: o.log.child({ part: "carry" }),
    });
  }

  static async start(nc: NatsConnection, o: ManagerOptions): Promise<ManagerService> {
    const seatLog = await SeatLog.open(o.jsConnection, o.space, o.log);
    const managers = await new Kvm(jetstream(o.jsConnection, JS_OPTIONS)).open(names.managersBucket(o.space), { bindOnly: true });
    const m = new ManagerService(nc, o, seatLog, managers);
    await m.rebuild();
    m.watchPresence();
    m.runs = await RunService.open(o);
    const runs = m.runs;
    for (const target of ["one", o.instance]) {
      m.subs.push(
        serveControl(
          nc,
          o.space,
          "manager",
          MANAGER_COMMANDS,
          {
            spawn: (args, caller) => m.serial(() => m.spawn(args, caller)),
            stop: (args, caller) => m.serial(() => m.stopSeat(args.name, caller)),
            despawn: (args, caller) => m.serial(() => m.stopSeat(args.name, caller)),
            ps: async (args) => ({ instance: o.instance, seats: m.view(args.all) }),
            status: async () => m.status(),
            run: (args, caller) => runs.run(args, caller),
            budget: (args) => runs.budget(args),
            "carry-begin": (args) => m.carry.begin(args),
            "carry-commit": (args) => m.carry.commit(args),
            "carry-resolve": (args) => m.carry.resolve(args),
          },
          o.log,
          { target },
        ),
      );
    }
    await m.beat();
    m.heartbeat = setInterval(() => void m.beat(), o.heartbeatMs ?? 3_000);
    await nc.flush();
    return m;
  }

  /** Stop serving and heartbeating. Seats keep running: a restarted manager adopts them. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.runs?.stop();
    this.carry.stop();
    if (this.heartbeat) clearInterval(this.heartbeat);
    for (const s of this.subs.splice(0)) s.unsubscribe();
    await this.queue.catch(() => undefined);
    await this.managers.delete(this.o.instance).catch(() => undefined);
  }

  /** Stop every seat this manager runs (retiring them), then the service: `cotal down`. */
  async stopWithSeats(caller: Principal): Promise<void> {
    for (const r of [...this.seats.values()]) {
      if (r.manager === this.o.instance && holdsName(r))
        await this.serial(() => this.stopSeat(nameOf(r.seat), caller)).catch((err) => this.o.log.warn({ err, seat: r.seat }, "stop failed"));
    }
    await this.tmux.closeIfIdle();
    await this.stop();
  }

  private serial<T>(f: () => Promise<T>): Promise<T> {
    const next = this.queue.then(f, f);
    this.queue = next.catch(() => undefined);
    return next;
  }

  private async beat(): Promise<void> {
    for (const [seat, l] of this.live) {
      const r = this.seats.get(seat);
      if (r?.state === "joined" && l.lastPresence)
        void this.maybeWake(seat, r, l, l.lastPresence).catch((err) => this.o.log.warn({ err, seat }, "wake failed"));
    }
    const status = this.status();
    try {
      await this.managers.put(this.o.instance, JSON.stringify({ ...status, ts: Date.now() }));
      if (this.beatFailing) this.o.log.info("manager heartbeat works again");
      this.beatFailing = false;
    } catch (err) {
      // Once per outage, not every beat.
      if (!this.beatFailing) this.o.log.warn({ err }, "manager heartbeat failed: `cotal ps` will not list this manager until it works");
      this.beatFailing = true;
    }
  }

  private status() {
    return {
      instance: this.o.instance,
      host: hostname(),
      pid: process.pid,
      seats: [...this.seats.values()].filter((r) => r.manager === this.o.instance && holdsName(r)).length,
      maxSeats: this.o.maxSeats ?? 32,
      startedAt: this.startedAt,
    };
  }

  /** Replay the log; adopt this instance's seats whose process still runs, relaunch the rest. */
  private async rebuild(): Promise<void> {
    for (const h of (await this.seatLog.replay()).values()) {
      const r = projectSeat(h);
      if (r) this.seats.set(r.seat, r);
    }
    for (const r of this.seats.values()) {
      if (r.manager !== this.o.instance || !["launched", "joined", "requested"].includes(r.state)) continue;
      const files = this.filesOf(r);
      const proc =
        r.pid === undefined || !r.startTime
          ? undefined
          : r.runtime === "tmux"
            ? this.tmux.adopt(nameOf(r.seat), r.pid, r.startTime)
            : r.runtime === "pty"
              ? undefined // a pty lives with the manager that held it: never adopted
              : adoptSeatProcess(r.pid, r.startTime, files.log);
      if (proc) {
        this.o.log.info({ seat: r.seat, pid: r.pid }, "re-adopted a running seat");
        this.watch(r.seat, {
          proc,
          files,
          stopping: false,
          restartsAt: [],
          ...(r.runtime === "tmux" ? { terminal: this.tmux.terminal(nameOf(r.seat)) } : {}),
          ...(r.state === "joined" ? { joinedEpoch: r.epoch } : {}),
        });
      } else {
        await this.serial(() =>
          this.onExit(
            r.seat,
            { proc: deadProcess(), files, stopping: false, restartsAt: [] },
            { code: null, signal: null },
            "the process was gone when the manager restarted",
          ),
        );
      }
    }
  }

  private filesOf(r: SeatRecord): SeatFiles {
    const dir = seatDir(this.o.stateDir, nameOf(r.seat));
    return { dir, material: join(dir, "launch.json"), log: join(dir, "seat.log"), creds: join(dir, `${r.uid}.creds`) };
  }

  /** Append to the seat's log and fold the event into the table; a stale view is the fence. */
  /** The seat log's `exited` record for a seat's process that ended (its last screen lines, if any). */
  private appendExited(seat: string, r: SeatRecord, exit: SeatExit, output: string | undefined): Promise<SeatRecord> {
    return this.append(seat, {
      type: "exited",
      seat,
      uid: r.uid,
      epoch: r.epoch,
      ts: Date.now(),
      code: exit.code,
      signal: exit.signal,
      ...(output ? { output } : {}),
    });
  }

  private async append(seat: string, event: Parameters<SeatLog["append"]>[0]): Promise<SeatRecord> {
    const before = this.seats.get(seat);
    const seq = await this.seatLog.append({ manager: this.o.instance, ...event }, before?.lastSeq ?? 0);
    const after = applyEvent(before, SeatEvent.parse({ manager: this.o.instance, ...event }));
    if (!after) throw new Error(`seat log event ${event.type} for ${seat} has no incarnation to apply to`);
    const next = { ...after, lastSeq: seq };
    this.seats.set(seat, next);
    return next;
  }

  private async spawn(a: Args<"spawn">, caller: Principal) {
    if (a.requestId) {
      const first = [...this.seats.values()].find((r) => r.requestId === a.requestId);
      if (first) return this.identity(first);
    }
    const runtime = a.runtime ?? (a.agent === "claude" ? "tmux" : "process");
    await this.admit(a.agent, runtime);
    const cwd = a.cwd ?? process.cwd();
    if (!isAbsolute(cwd) || !statSync(cwd, { throwIfNoEntry: false })?.isDirectory()) {
      throw new SeatRefusedError(
        "bad-cwd",
        `The working directory ${JSON.stringify(cwd)} is not an absolute path to a folder on ${hostname()}; nothing was started.`,
        "Pass --cwd with a folder that exists on the manager's host.",
      );
    }
    const mine = [...this.seats.values()].filter((r) => r.manager === this.o.instance && holdsName(r)).length;
    if (mine >= (this.o.maxSeats ?? 32)) {
      throw new SeatRefusedError(
        "seat-limit",
        `Manager ${this.o.instance} already runs ${mine} seats (its limit); nothing was started.`,
        "Stop a seat (`cotal stop --name N`), spawn on another manager (`--on`), or start this one with a higher --max-seats.",
      );
    }
    // An agent file is read on this host, before anything is claimed: a missing or invalid one refuses the spawn.
    const fm = a.persona ? loadAgentFile(cwd, a.persona).frontmatter : undefined;
    const carried = this.takeCarried(a);
    const role = a.role ?? fm?.role;
    const channels = a.channels.length ? a.channels : (fm?.subscribe ?? []);
    const model = a.model ?? fm?.model;
    const uid = newLifecycleUid();
    const spec = {
      runtime,
      cwd,
      channels,
      ...(model ? { model } : {}),
      ...(carried ? { carried: { session: carried.session, digest: carried.digest } } : {}),
      ...(a.restarts !== undefined ? { restarts: a.restarts } : {}),
      ...(a.windowMs !== undefined ? { windowMs: a.windowMs } : {}),
    };
    const { name, seat } = await this.claimName(a.name ?? fm?.name ?? a.agent, {
      uid,
      agent: a.agent,
      role,
      persona: a.persona,
      caller,
      requestId: a.requestId,
      spec,
    });
    try {
      const files = await prepareSeat(this.nc, this.o, {
        name,
        uid,
        role,
        channels,
        ...(a.noEvents ? { noEvents: true } : {}),
        allowSubscribe: [...new Set([...channels, ...(fm?.allowSubscribe ?? [])])],
        allowPublish: [...new Set([...channels, ...(fm?.allowPublish ?? [])])],
      });
      await this.start(seat, files, 0, [], a.prompt, carried?.file);
    } catch (err) {
      const r = this.seats.get(seat);
      if (r && holdsName(r))
        await this.retire(seat, `could not be started: ${(err as Error).message}`).catch((e: unknown) =>
          this.o.log.error({ err: e, seat }, "retiring a seat that could not start failed"),
        );
      throw err;
    }
    return this.identity(this.seats.get(seat)!);
  }

  /** A `--resume` spawn's claim, taken once (before anything is claimed); refused for echo seats. */
  private takeCarried(a: Args<"spawn">): StagedTranscript | undefined {
    if (a.resume === undefined) return undefined;
    if (a.agent !== "claude")
      throw new SeatRefusedError(
        "resume-unavailable",
        "Only Claude seats resume a carried session; nothing was started.",
        "Leave out --resume, or spawn a claude seat.",
      );
    return this.carry.take(a.claim, a.resume);
  }

  /** Refuse, before anything runs, an agent or runtime this manager cannot start. */
  private async admit(agent: SeatAgent, runtime: string): Promise<void> {
    if (agent === "echo" && runtime !== "process") {
      throw new SeatRefusedError(
        "runtime-unavailable",
        `The echo agent runs headless (runtime process), not ${runtime}; nothing was started.`,
        "Spawn echo seats with --runtime process (the default).",
      );
    }
    if (agent === "claude") {
      if (runtime !== "tmux" && runtime !== "pty")
        throw new SeatRefusedError(
          "runtime-unavailable",
          `Claude seats run in a terminal the manager owns (tmux or pty), not ${runtime}; nothing was started.`,
          "Use --runtime tmux (the default for claude) or --runtime pty.",
        );
      if (!this.o.claude)
        throw new SeatRefusedError(
          "agent-unavailable",
          `Manager ${this.o.instance} cannot start Claude seats (no claude executable or plugin tree configured); nothing was started.`,
          "Install @anthropic-ai/claude-code where the manager runs (or set COTAL_CLAUDE_BIN), then restart the manager.",
        );
      if (runtime === "tmux") await TmuxServer.check();
      else await checkScript();
    }
  }

  /**
   * Claim `base` (or `base_2`, `base_3`…) by appending `requested` to its log: the append's
   * expected sequence makes two managers claiming one name at once fail all but one.
   */
  private async claimName(
    base: string,
    r: {
      uid: string;
      agent: SeatAgent;
      role?: string | undefined;
      persona?: string | undefined;
      caller: Principal;
      requestId?: string | undefined;
      spec: SeatRecord["spec"];
    },
  ) {
    for (let n = 1; n <= 99; n++) {
      const name = n === 1 ? base : `${base}_${n}`;
      const seat = `local.${name}`;
      const held = this.seats.get(seat);
      if (held && holdsName(held)) continue;
      try {
        await this.append(seat, {
          type: "requested",
          seat,
          uid: r.uid,
          epoch: 0,
          ts: Date.now(),
          agent: r.agent,
          ...(r.role ? { role: r.role } : {}),
          ...(r.persona ? { persona: r.persona } : {}),
          by: `${r.caller.owner}.${r.caller.actor}`,
          ...(r.requestId ? { requestId: r.requestId } : {}),
          ...(r.spec.runtime ? { runtime: r.spec.runtime as SeatRuntime } : {}),
          ...(r.spec.cwd ? { cwd: r.spec.cwd } : {}),
          ...(r.spec.model ? { model: r.spec.model } : {}),
          channels: r.spec.channels,
          ...(r.spec.restarts !== undefined ? { restarts: r.spec.restarts } : {}),
          ...(r.spec.windowMs !== undefined ? { windowMs: r.spec.windowMs } : {}),
          ...(r.spec.carried ? { carried: r.spec.carried } : {}),
        });
        return { name, seat };
      } catch (err) {
        if (!(err instanceof StaleSeatLogError)) throw err;
        await this.refresh(seat); // another manager wrote it: learn what, then try the next number
      }
    }
    throw new SeatRefusedError(
      "name-taken",
      `Every name from ${base} to ${base}_99 is held; nothing was started.`,
      "Stop seats you no longer need, or pick another --name.",
    );
  }

  private async refresh(seat: string): Promise<void> {
    const h = (await this.seatLog.replay()).get(seat);
    const r = h && projectSeat(h);
    if (r) this.seats.set(seat, r);
  }

  private async start(seat: string, files: SeatFiles, epoch: number, restartsAt: number[], prompt?: string, carriedFile?: string): Promise<void> {
    const r = this.seats.get(seat)!;
    if (r.agent === "claude" && this.o.claude) {
      const cwd = r.spec.cwd ?? process.cwd();
      const agentFile = r.persona ? loadAgentFile(cwd, r.persona) : undefined;
      const runtime = r.spec.runtime === "pty" ? "pty" : "tmux";
      const { proc, terminal, permissionMode } = await startClaudeSeat(this.o.claude, runtime === "pty" ? { pty: true } : { tmux: this.tmux }, files, {
        name: nameOf(seat),
        space: this.o.space,
        cwd,
        model: r.spec.model,
        agentFile,
        resume: r.spec.carried ? { ...r.spec.carried, file: carriedFile } : undefined,
      });
      await this.append(seat, {
        type: "launched",
        seat,
        uid: r.uid,
        epoch,
        ts: Date.now(),
        runtime,
        pid: proc.pid,
        ...(proc.startTime ? { startTime: proc.startTime } : {}),
        ...(permissionMode ? { permissionMode } : {}),
      });
      const l: Live = { proc, files, stopping: false, restartsAt, terminal };
      this.watch(seat, l);
      void this.untilReady(seat, l, prompt);
      return;
    }
    const proc = launchSeat(this.o, r.agent, files);
    await this.append(seat, {
      type: "launched",
      seat,
      uid: r.uid,
      epoch,
      ts: Date.now(),
      runtime: "process",
      ...(proc.pid > 0 ? { pid: proc.pid } : {}),
      ...(proc.startTime ? { startTime: proc.startTime } : {}),
    });
    this.watch(seat, { proc, files, stopping: false, restartsAt });
  }

  /**
   * An interactive seat must reach its input screen unattended: on a screen it does not expect
   * it is failed and retired, naming the screen. Once ready, the spawn's prompt is typed in.
   */
  private async untilReady(seat: string, l: Live, prompt?: string): Promise<void> {
    try {
      await awaitInputScreen(l.terminal!, l.proc, this.o.claude?.screenTimeoutMs, (screen) => (l.lastScreen = screen));
      if (prompt && !this.stopped) await l.terminal!.type(prompt);
    } catch (err) {
      if (this.stopped || this.live.get(seat) !== l || l.stopping) return;
      const why = err instanceof UnexpectedScreenError ? err.message : `its screen could not be read: ${(err as Error).message}`;
      l.stopping = true;
      await this.serial(async () => {
        const exit = await l.proc.stop(2_000);
        this.live.delete(seat);
        const r = this.seats.get(seat);
        if (!r || !holdsName(r)) return;
        const output = err instanceof UnexpectedScreenError ? err.screen.trimEnd().split("\n").slice(-20).join("\n") : undefined;
        await this.appendExited(seat, r, exit, output);
        await this.retire(seat, `failed: ${why}`);
      }).catch((e: unknown) => this.o.log.error({ err: e, seat }, "failing a seat that did not start failed"));
    }
  }

  private watch(seat: string, l: Live): void {
    this.live.set(seat, l);
    void l.proc.exited
      .then((exit) => {
        if (this.stopped || this.live.get(seat) !== l || l.stopping) return;
        return this.serial(() => this.onExit(seat, l, exit));
      })
      .catch((err) => this.o.log.error({ err, seat }, "seat exit handling failed"));
  }

  /** A seat's process ended on its own: record it, then restart, or retire a seat that never joined or loops. */
  private async onExit(seat: string, l: Live, exit: SeatExit, why?: string): Promise<void> {
    this.live.delete(seat);
    const r = this.seats.get(seat);
    if (!r || !holdsName(r)) return;
    const output = why ?? (await this.lastOutput(r, l));
    await this.appendExited(seat, r, exit, output);
    const windowMs = r.spec.windowMs ?? this.o.windowMs ?? 60_000;
    const recent = [...l.restartsAt.filter((t) => Date.now() - t < windowMs), Date.now()];
    const joined = r.state === "joined" || l.joinedEpoch !== undefined;
    const screen = r.runtime === "tmux" && output ? classifyScreen(output) : undefined;
    let reason: string | undefined;
    if (!joined)
      reason =
        screen?.kind === "blocked"
          ? `failed: the seat stopped on ${screen.name}, then ${describeExit(exit)}`
          : `failed: ${describeExit(exit)} before it joined`;
    else if (recent.length > (r.spec.restarts ?? this.o.restarts ?? 3))
      reason = `crash loop: exited ${recent.length} times within ${Math.round(windowMs / 1000)} s, last ${describeExit(exit)}`;
    if (reason) {
      await this.retire(seat, reason);
      return;
    }
    const rr = await this.append(seat, { type: "restarted", seat, uid: r.uid, epoch: r.epoch + 1, ts: Date.now(), reason: describeExit(exit) });
    await this.start(seat, l.files, rr.epoch, recent);
  }

  /** What a seat showed last: its log's tail, or its terminal's last screen (the window is kept until read, then closed). */
  private async lastOutput(r: SeatRecord, l: Live): Promise<string> {
    if (!l.terminal) return logTailOf(l.files.log);
    let screen = (await l.terminal.screen(100)).trimEnd();
    await l.terminal.close();
    // An exiting TUI may leave a blank screen (it restores the main one): then what it showed last.
    if (classifyScreen(screen).kind !== "blocked" && l.lastScreen && classifyScreen(l.lastScreen).kind === "blocked") screen = l.lastScreen.trimEnd();
    return screen.split("\n").slice(-30).join("\n");
  }

  private async retire(seat: string, reason: string): Promise<number> {
    const r = this.seats.get(seat)!;
    try {
      return await retireSeatFiles(this.nc, this.o, nameOf(seat));
    } finally {
      await this.append(seat, { type: "retired", seat, uid: r.uid, epoch: r.epoch, ts: Date.now(), reason });
    }
  }

  private async stopSeat(name: string, caller: Principal) {
    const seat = `local.${name}`;
    const r = this.seats.get(seat);
    if (!r || !holdsName(r))
      throw new SeatRefusedError(
        "no-such-seat",
        `No seat named ${name} runs on manager ${this.o.instance}; nothing was stopped.`,
        "See `cotal ps` for the seats and the manager each runs on.",
      );
    if (r.manager !== this.o.instance)
      throw new SeatRefusedError(
        "not-mine",
        `Seat ${name} runs on manager ${r.manager ?? "unknown"}, not ${this.o.instance}; nothing was stopped.`,
        `Call it there: \`cotal stop --name ${name} --on ${r.manager ?? "<instance>"}\`.`,
      );
    const l = this.live.get(seat);
    let stopped = false;
    if (l) {
      l.stopping = true;
      const exit = await l.proc.stop();
      this.live.delete(seat);
      stopped = true;
      await this.append(seat, { type: "exited", seat, uid: r.uid, epoch: r.epoch, ts: Date.now(), code: exit.code, signal: exit.signal });
    }
    const revoked = await this.retire(seat, `stopped by ${caller.owner}.${caller.actor}`);
    return { seat, uid: r.uid, stopped, revoked };
  }

  /** Presence says a launched seat's incarnation joined: record it once per epoch. */
  private watchPresence(): void {
    const sub = this.nc.subscribe(patterns.presenceAll(this.o.space), {
      callback: (_err, msg) => {
        const seat = msg.subject.split(".").slice(-2).join(".");
        let p: SeatPresence;
        try {
          p = JSON.parse(new TextDecoder().decode(msg.data)) as SeatPresence;
        } catch {
          // A deleted key (the mesh service took it offline): nothing to wake.
          const gone = this.live.get(seat);
          if (gone) gone.lastPresence = undefined;
          return;
        }
        const r = this.seats.get(seat);
        const l = this.live.get(seat);
        if (l && r && p.lifecycleUid === r.uid) l.lastPresence = p.status === "offline" ? undefined : p;
        if (!r || !l || p.lifecycleUid !== r.uid || p.status === "offline") return;
        if (r.state === "joined") {
          void this.maybeWake(seat, r, l, p).catch((err) => this.o.log.warn({ err, seat }, "wake failed"));
          return;
        }
        if (r.state !== "launched") return;
        l.joinedEpoch = r.epoch;
        void this.serial(async () => {
          const now = this.seats.get(seat);
          if (now?.state === "launched" && now.uid === r.uid) await this.append(seat, { type: "joined", seat, uid: r.uid, epoch: r.epoch, ts: Date.now() });
        }).catch((err) => this.o.log.warn({ err, seat }, "joined record failed"));
      },
    });
    this.subs.push(sub);
  }

  /**
   * Wake an idle Claude seat that holds mail its attention lets through: type a short prompt into
   * its terminal, so the next turn's hook hands the mail over (the channel push is not available
   * to count on). Never into a seat that is working, waiting (approval or input), has a person
   * attached, or whose screen is not its empty input screen; at most once per WAKE_EVERY_MS
   * unless it worked in between.
   */
  private async maybeWake(seat: string, r: SeatRecord, l: Live, p: SeatPresence): Promise<void> {
    if (!l.terminal) return;
    if (p.status === "working" || p.status === "waiting") {
      l.wokenAt = undefined; // it is busy: the next idle moment may be woken again at once
      return;
    }
    if (p.status !== "idle" || !(typeof p.unread === "number" && p.unread > 0) || p.attention === "dnd") return;
    if (l.wokenAt !== undefined && Date.now() - l.wokenAt < WAKE_EVERY_MS) return;
    if (l.waking) return;
    l.waking = true;
    try {
      if (await l.terminal.attached()) return;
      if (classifyScreen(await l.terminal.screen()).kind !== "ready") return;
      await l.terminal.type(WAKE_PROMPT);
      l.wokenAt = Date.now();
      this.o.log.info({ seat, unread: p.unread }, "woke an idle seat holding mail (typed into its terminal)");
    } finally {
      l.waking = false;
    }
  }

  private identity(r: SeatRecord) {
    return { seat: r.seat, name: nameOf(r.seat), uid: r.uid, instance: r.manager ?? this.o.instance, state: this.stateOf(r) };
  }

  private stateOf(r: SeatRecord): SeatView["state"] {
    if (r.state === "launched" && Date.now() - r.since > (this.o.readinessMs ?? 30_000)) return "uncertain";
    return r.state;
  }

  private view(all: boolean): SeatView[] {
    return [...this.seats.values()]
      .filter((r) => r.manager === this.o.instance && (all || holdsName(r)))
      .map((r) => ({
        seat: r.seat,
        name: nameOf(r.seat),
        uid: r.uid,
        epoch: r.epoch,
        state: this.stateOf(r),
        agent: r.agent,
        instance: this.o.instance,
        ...(r.role ? { role: r.role } : {}),
        ...(r.runtime ? { runtime: r.runtime as SeatView["runtime"] } : {}),
        ...(r.permissionMode ? { permissionMode: r.permissionMode } : {}),
        ...(this.live.get(r.seat)?.terminal ? { attach: this.live.get(r.seat)!.terminal!.attachCommand() } : {}),
        ...(this.live.get(r.seat)?.wokenAt !== undefined ? { lastWakeAt: this.live.get(r.seat)!.wokenAt! } : {}),
        ...(r.pid !== undefined ? { pid: r.pid } : {}),
        ...(r.exit ? { exit: r.exit } : {}),
        ...(r.reason ? { reason: r.reason } : {}),
        ...(r.spec.carried ? { carried: r.spec.carried } : {}),
        requestedAt: r.requestedAt,
        since: r.since,
        restarts: this.live.get(r.seat)?.restartsAt.length ?? 0,
      }));
  }
}

function nameOf(seat: string): string {
  return seat.slice(seat.indexOf(".") + 1);
}

function describeExit(e: SeatExit): string {
  return e.signal ? `killed by ${e.signal}` : e.code === null ? "gone (exit status unknown)" : `exit code ${e.code}`;
}

/** A process that is already gone (for a seat found dead at restart). */
function deadProcess(): SeatProcess {
  const exited = Promise.resolve({ code: null, signal: null });
  return { pid: -1, startTime: undefined, exited, stop: () => exited };
}

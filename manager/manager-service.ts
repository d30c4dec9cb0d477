import { Kvm, type KV } from "@nats-io/kv";
import { jetstream } from "@nats-io/jetstream";
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import { MANAGER_COMMANDS, SeatEvent, names, patterns, principalId, type Principal, type SeatView, type TableParsedArgs } from "../schemas/index.js";
import { JS_OPTIONS, serveControl, SERVICE_PRINCIPALS } from "../broker/index.js";
import type { RuntimeHost } from "../runtime/index.js";
import { DEFAULT_RUNTIME, runtimeNamed } from "../runtimes/index.js";
import { tmuxSessionName, tmuxSocketPath } from "./attach.js";
import { SeatRefusedError } from "./errors.js";
import { handover, type HandoverContext } from "./handover.js";
import { newLifecycleUid } from "./lifecycle-uid.js";
import { wakeIfDue, type LiveSeat, type SeatPresence } from "./live-seat.js";
import type { SeatTableAccess } from "./manager-context.js";
import { ManagerHeartbeat } from "./manager-heartbeat.js";
import type { ManagerOptions } from "./manager-options.js";
import { claimName, type NameClaimContext } from "./name-claims.js";
import { mailOpeningPrompt } from "./opening-prompt.js";
import type { SeatExit } from "./process-host.js";
import { isOperator, RunService } from "./runs.js";
import { adapterOf, hostsOf } from "./runtime-checks.js";
import { prepareSeat } from "./seat-launcher.js";
import { SeatLog, type SeatHistory } from "./seat-log.js";
import { SeatRecovery } from "./seat-recovery.js";
import { SeatRenewal } from "./seat-renewal.js";
import { SeatRetirement } from "./seat-retirement.js";
import { SeatSupervisor } from "./seat-supervisor.js";
import { applyEvent, holdsName, projectSeat, type SeatRecord } from "./seat-table.js";
import { seatName, seatState, seatViews } from "./seat-views.js";
import { SpawnAdmission } from "./spawn-admission.js";
import { steerableSeat } from "./steer.js";
import { TmuxServer } from "./tmux-host.js";
import { TranscriptDesk } from "./transcript-carry.js";

type Args<C extends keyof typeof MANAGER_COMMANDS> = TableParsedArgs<typeof MANAGER_COMMANDS, C>;

/** What the manager types into an idle seat that holds mail: the turn it starts hands the mail over. */
export const WAKE_PROMPT = DEFAULT_RUNTIME.wakePrompt;

/**
 * The manager of one host (docs/manager.md): serves spawn, stop, ps and status on the control rail
 * (any manager, or this instance by id), keeps every seat's life in the seat log, supervises the
 * processes it started, and re-adopts them after its own restart.
 */
export class ManagerService {
  private readonly seats = new Map<string, SeatRecord>();
  private readonly live = new Map<string, LiveSeat>();
  /** Per seat: this manager's last sequence on its own subject of the seat's log (the fence its next append expects). */
  private readonly ownSeq = new Map<string, number>();
  private readonly subs: Subscription[] = [];
  /** Set by stop(): this instance writes nothing more (a successor may own the log now). */
  private stopped = false;
  /** Where each runtime this manager can start is (runtimes/). */
  private readonly hosts: Map<string, RuntimeHost>;
  /** Serialises changes to the table and the log (one writer per seat at a time). */
  private queue: Promise<unknown> = Promise.resolve();
  /** The manager's own tmux server: one session per space, a window per seat. */
  private readonly tmux: TmuxServer;
  /** One-shot runs and their budgets (manager/runs.ts). */
  private runs?: RunService;
  /** Carried transcripts staged here and their one-time claims (manager/transcript-carry.ts). */
  private readonly carry: TranscriptDesk;
  /** Retiring seats and their helpers (seat-retirement.ts). */
  private readonly retirement: SeatRetirement;
  /** Each live seat's start, exit and restart (seat-supervisor.ts). */
  private readonly supervisor: SeatSupervisor;
  /** Taking up the log's seats at start (seat-recovery.ts). */
  private readonly recovery: SeatRecovery;
  /** This manager's heartbeat and status (manager-heartbeat.ts). */
  private readonly heartbeat: ManagerHeartbeat;
  /** Running seats' credentials minted again before they expire (seat-renewal.ts). */
  private readonly renewal: SeatRenewal;
  /** What claiming a seat's name reads and writes (name-claims.ts). */
  private readonly names: NameClaimContext;
  /** Who may spawn what, and the personas a caller may (spawn-admission.ts). */
  private readonly admission: SpawnAdmission;
  /** What handing a helper over reads and writes (handover.ts). */
  private readonly handing: HandoverContext;

  private constructor(
    private readonly nc: NatsConnection,
    private readonly o: ManagerOptions,
    private readonly seatLog: SeatLog,
    managers: KV,
  ) {
    this.tmux = new TmuxServer(tmuxSocketPath(o.stateDir), tmuxSessionName(o.space));
    this.hosts = hostsOf(o);
    const table: SeatTableAccess = {
      seats: this.seats,
      append: (seat, event) => this.append(seat, event),
      appendExited: (seat, r, exit, output, retiring) => this.appendExited(seat, r, exit, output, retiring),
    };
    this.retirement = new SeatRetirement({ ...table, nc, o, live: this.live });
    this.supervisor = new SeatSupervisor({
      ...table,
      o,
      live: this.live,
      hosts: this.hosts,
      tmux: this.tmux,
      serial: (f) => this.serial(f),
      stopped: () => this.stopped,
      retire: (seat, reason) => this.retirement.retire(seat, reason),
    });
    this.recovery = new SeatRecovery({
      ...table,
      o,
      seatLog,
      learn: (h) => this.learn(h),
      tmux: this.tmux,
      serial: (f) => this.serial(f),
      supervisor: this.supervisor,
      retirement: this.retirement,
    });
    this.heartbeat = new ManagerHeartbeat({ o, managers, seats: this.seats, live: this.live, hosts: this.hosts });
    this.renewal = new SeatRenewal({ nc, o, seats: this.seats, live: this.live, serial: (f) => this.serial(f), stopped: () => this.stopped });
    this.names = { seats: this.seats, append: table.append, seatLog, learn: (h) => this.learn(h), log: o.log };
    this.carry = new TranscriptDesk({
      nc,
      js: o.jsConnection,
      space: o.space,
      instance: o.instance,
      stateDir: o.stateDir,
      caller: o.caller ?? SERVICE_PRINCIPALS.cli,
      log: o.log.child({ part: "carry" }),
    });
    this.admission = new SpawnAdmission({ nc, o, seats: this.seats, seatLog, hosts: this.hosts, carry: this.carry, runs: () => this.runs });
    this.handing = { append: table.append, admission: this.admission, ownedSeat: (name, caller, what) => this.ownedSeat(name, caller, what), log: o.log };
  }

  static async start(nc: NatsConnection, o: ManagerOptions): Promise<ManagerService> {
    const seatLog = await SeatLog.open(o.jsConnection, o.space, o.log, o.caller ?? SERVICE_PRINCIPALS.cli);
    const managers = await new Kvm(jetstream(o.jsConnection, JS_OPTIONS)).open(names.managersBucket(o.space), { bindOnly: true });
    const m = new ManagerService(nc, o, seatLog, managers);
    await m.recovery.rebuild();
    await m.serial(() => m.retirement.retireOrphans());
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
            personas: (_args, caller) => m.admission.personas(caller),
            handover: (args, caller) => m.serial(() => handover(m.handing, args, caller)),
            ps: async (args, caller) => ({ instance: o.instance, seats: m.view(args.all, caller) }),
            status: async () => m.heartbeat.status(),
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
    await m.heartbeat.start();
    m.renewal.start();
    await nc.flush();
    return m;
  }

  /** Stop serving and heartbeating. Seats keep running: a restarted manager adopts them. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.runs?.stop();
    this.carry.stop();
    this.heartbeat.stop();
    this.renewal.stop();
    for (const s of this.subs.splice(0)) s.unsubscribe();
    await this.queue.catch(() => undefined);
    await this.heartbeat.withdraw();
  }

  /**
   * Stop every seat this manager runs (retiring them), then the service: `cotal down`. The manager's
   * own shutdown (`caller` is whoever asked, for the seat log): no seat's owner is asked, so a helper
   * stops as its spawner does.
   */
  async stopWithSeats(caller: Principal): Promise<void> {
    for (const seat of [...this.seats.keys()]) {
      await this.serial(async () => {
        // A helper may have gone with its spawner already.
        const r = this.seats.get(seat);
        if (r?.manager === this.o.instance && holdsName(r))
          await this.retirement.stopAndRetire(r.seat, r, `stopped with its manager by ${principalId(caller)}`);
      }).catch((err) => this.o.log.warn({ err, seat }, "stop failed"));
    }
    await this.tmux.closeIfIdle();
    await this.stop();
  }

  private serial<T>(f: () => Promise<T>): Promise<T> {
    const next = this.queue.then(f, f);
    this.queue = next.catch(() => undefined);
    return next;
  }

  /**
   * The seat log's `exited` record for a seat's process that ended (its last screen lines, if any;
   * `retiring`: the reason of the retirement that follows, so a successor finishes it, not restarts it).
   */
  private appendExited(seat: string, r: SeatRecord, exit: SeatExit, output: string | undefined, retiring?: string): Promise<SeatRecord> {
    return this.append(seat, {
      type: "exited",
      seat,
      uid: r.uid,
      epoch: r.epoch,
      ts: Date.now(),
      code: exit.code,
      signal: exit.signal,
      ...(output ? { output } : {}),
      ...(retiring !== undefined ? { retiring } : {}),
    });
  }

  /** Append to the seat's log and fold the event into the table; a stale view is the fence. */
  private async append(seat: string, event: Parameters<SeatLog["append"]>[0]): Promise<SeatRecord> {
    const before = this.seats.get(seat);
    const seq = await this.seatLog.append({ manager: this.o.instance, ...event }, this.ownSeq.get(seat) ?? 0);
    this.ownSeq.set(seat, seq);
    const after = applyEvent(before, SeatEvent.parse({ manager: this.o.instance, ...event }));
    if (!after) throw new Error(`seat log event ${event.type} for ${seat} has no incarnation to apply to`);
    const next = { ...after, lastSeq: seq, ...(event.type === "requested" ? { writer: this.seatLog.writerId } : {}) };
    this.seats.set(seat, next);
    return next;
  }

  /** Take a seat's history as the log tells it: its projection, and this manager's own fence token on it. */
  private learn(h: SeatHistory): SeatRecord | undefined {
    const r = projectSeat(h);
    if (r) this.seats.set(h.seat, r);
    this.ownSeq.set(h.seat, h.lastSeqBy.get(this.seatLog.writerId) ?? 0);
    return r;
  }

  private async spawn(request: Args<"spawn">, caller: Principal) {
    // A spawn that names no agent runs the registry's default runtime (schemas/ names none).
    const asked = { ...request, agent: request.agent ?? DEFAULT_RUNTIME.name };
    if (asked.requestId) {
      const first = [...this.seats.values()].find((r) => r.requestId === asked.requestId);
      if (first) return this.identity(first);
    }
    const { a, terminal, cwd, steerer, helper, agentFile, carried, scope, model, allowSpawn, spawnLimit, pinned, posture } = await this.admission.admit(
      asked,
      caller,
    );
    const fm = agentFile?.frontmatter;
    const { role, channels } = scope;
    const uid = newLifecycleUid();
    const spec = {
      terminal,
      ...(posture === "supervised" ? { posture } : {}),
      cwd,
      channels,
      ...(model ? { model } : {}),
      ...(carried ? { carried: { session: carried.session, digest: carried.digest } } : {}),
      ...(agentFile?.digest ? { personaDigest: agentFile.digest } : {}),
      ...(a.restarts !== undefined ? { restarts: a.restarts } : {}),
      ...(a.windowMs !== undefined ? { windowMs: a.windowMs } : {}),
    };
    const { name, seat } = await claimName(this.names, a.name ?? fm?.name ?? a.agent, {
      uid,
      agent: a.agent,
      role,
      persona: a.persona,
      caller,
      requestId: a.requestId,
      spec,
      ...(helper ? { spawnedBy: helper.spawnedBy, ...(helper.spawnerUid ? { spawnerUid: helper.spawnerUid } : {}) } : {}),
      ...(steerer ? { spawnedBy: steerer } : {}),
      ...(allowSpawn.length ? { allowSpawn, ...(spawnLimit !== undefined ? { spawnLimit } : {}) } : {}),
    });
    try {
      const files = await prepareSeat(this.nc, this.o, {
        name,
        uid,
        agent: a.agent,
        role,
        channels,
        // A runtime whose transcript the event plane cannot read publishes no plane (docs/runtimes.md).
        ...(a.noEvents || runtimeNamed(a.agent)?.capabilities.eventPlane === false ? { noEvents: true } : {}),
        allowSubscribe: scope.allowSubscribe,
        allowPublish: scope.allowPublish,
        allowSpawn,
        spawnLimit,
        personaDigests: pinned,
        manager: this.o.instance,
        // Who may answer its permission asks besides the operator and the approve right: whoever spawned it.
        spawnedBy: helper?.spawnedBy ?? principalId(caller),
        ...(posture === "supervised" ? { posture } : {}),
      });
      // What another principal chose is mail, never keystrokes: stored before the seat starts, so
      // its first hook (session start, or the wake typed once it is ready) hands it over.
      const opening = a.prompt !== undefined && runtimeNamed(a.agent) !== undefined;
      if (opening) await mailOpeningPrompt(this.o, seat, uid, a.prompt!, caller);
      await this.supervisor.start(seat, files, 0, { restartsAt: [] }, opening, carried?.file);
    } catch (err) {
      const r = this.seats.get(seat);
      if (r && holdsName(r))
        await this.retirement
          .retire(seat, `could not be started: ${(err as Error).message}`)
          .catch((e: unknown) => this.o.log.error({ err: e, seat }, "retiring a seat that could not start failed"));
      throw err;
    }
    return this.identity(this.seats.get(seat)!);
  }

  /**
   * The seat `name` of this manager that `caller` may change: the operator's any, an agent's only a
   * helper that answers to it. Refused otherwise, naming why (and where it runs, when elsewhere).
   */
  private ownedSeat(name: string, caller: Principal, what: string): SeatRecord {
    const r = this.seats.get(`local.${name}`);
    if (!r || !holdsName(r))
      throw new SeatRefusedError(
        "no-such-seat",
        `No seat named ${name} runs on manager ${this.o.instance}; nothing was ${what}.`,
        "See `cotal ps` for the seats and the manager each runs on.",
      );
    if (!isOperator(caller) && r.spawnedBy !== principalId(caller))
      throw new SeatRefusedError(
        "not-your-helper",
        `${name} does not answer to ${principalId(caller)}: an agent may change only the helpers it spawned (or was handed); nothing was ${what}.`,
        "Ask its spawner, or the operator (`cotal stop`).",
      );
    if (r.manager !== this.o.instance)
      throw new SeatRefusedError(
        "not-mine",
        `Seat ${name} runs on manager ${r.manager ?? "unknown"}, not ${this.o.instance}; nothing was ${what}.`,
        `Call it there: \`cotal stop --name ${name} --on ${r.manager ?? "<instance>"}\`.`,
      );
    return r;
  }

  private async stopSeat(name: string, caller: Principal) {
    const steerer = isOperator(caller) ? undefined : await this.admission.steererOf(caller);
    const r = steerer ? steerableSeat(this.seats.get(`local.${name}`), name, steerer, this.o.instance) : this.ownedSeat(name, caller, "stopped");
    return this.retirement.stopAndRetire(r.seat, r, `stopped by ${caller.owner}.${caller.actor}`);
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
          void wakeIfDue(seat, l, adapterOf(r), p, this.o.log).catch((err) => this.o.log.warn({ err, seat }, "wake failed"));
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

  /** The seats `ps` answers (seat-views.ts). */
  private view(all: boolean, caller: Principal): SeatView[] {
    return seatViews(this.seats.values(), this.live, { instance: this.o.instance, stateDir: this.o.stateDir, readinessMs: this.o.readinessMs }, all, caller);
  }

  private identity(r: SeatRecord) {
    return { seat: r.seat, name: seatName(r.seat), uid: r.uid, instance: r.manager ?? this.o.instance, state: seatState(r, this.o.readinessMs) };
  }
}

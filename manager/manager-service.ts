import { readdirSync, statSync } from "node:fs";
import { hostname } from "node:os";
import { isAbsolute, join } from "node:path";
import { Kvm, type KV } from "@nats-io/kv";
import { jetstream } from "@nats-io/jetstream";
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import {
  MANAGER_COMMANDS,
  SeatEvent,
  names,
  parsePrincipal,
  patterns,
  principalId,
  type AgentFrontmatter,
  type PersonaInfo,
  type Principal,
  type SpawnGrant,
  type SeatAgent,
  type SeatView,
  type TableParsedArgs,
} from "../schemas/index.js";
import { callControl, JS_OPTIONS, serveControl, SERVICE_PRINCIPALS } from "../broker/index.js";
import { SeatRefusedError, unsupervisable } from "./errors.js";
import { newLifecycleUid } from "./lifecycle-uid.js";
import { type SeatExit } from "./process-host.js";
import { prepareSeat } from "./seat-launcher.js";
import { redactHostPaths } from "./host-paths.js";
import { isOperator } from "./runs.js";
import { SeatLog } from "./seat-log.js";
import { loadAgentFile, personaDigests, type AgentFile, DEFAULT_RUNTIME, runtimeNamed } from "../runtimes/index.js";
import { adapterOf, hostsOf, refuseUnknownAgent, refuseWithoutAuth } from "./runtime-checks.js";
import type { ManagerOptions } from "./manager-options.js";
import type { SeatTableAccess } from "./manager-context.js";
import { SeatRetirement } from "./seat-retirement.js";
import { SeatSupervisor } from "./seat-supervisor.js";
import { SeatRecovery } from "./seat-recovery.js";
import { ManagerHeartbeat } from "./manager-heartbeat.js";
import { SeatRenewal } from "./seat-renewal.js";
import { checkScript } from "./pty-host.js";
import { mailOpeningPrompt } from "./opening-prompt.js";
import { claimName, type NameClaimContext } from "./name-claims.js";
import { TmuxServer } from "./tmux-host.js";
import { tmuxSessionName, tmuxSocketPath } from "./attach.js";
import { RunService } from "./runs.js";
import type { RuntimeHost } from "../runtime/index.js";
import { TranscriptDesk, type StagedTranscript } from "./transcript-carry.js";
import { applyEvent, holdsName, projectSeat, type SeatRecord } from "./seat-table.js";
import {
  helperAgent,
  refuseOperatorOnly,
  pinProblem,
  refuseOverLimit,
  refuseUngranted,
  refuseUnpinned,
  refuseWider,
  refuseWithoutRight,
  seatScope,
  spawnLimitOf,
  widerThan,
} from "./helpers.js";
import type { SeatHistory } from "./seat-log.js";
import { admitSteered, steerableSeat, steers } from "./steer.js";
import { wakeIfDue, type LiveSeat, type SeatPresence } from "./live-seat.js";
import { seatName, seatState, seatViews } from "./seat-views.js";

type Args<C extends keyof typeof MANAGER_COMMANDS> = TableParsedArgs<typeof MANAGER_COMMANDS, C>;
/** A spawn with its agent named (the default runtime's when the request named none). */
type SpawnRequest = Args<"spawn"> & { agent: string };

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
            personas: (_args, caller) => m.personas(caller),
            handover: (args, caller) => m.serial(() => m.handover(args, caller)),
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
    // A person with the steer right spawns a persona as the operator would (steer.ts); anyone else
    // but the operator spawns a helper: within its grant, its limit and the budget gates.
    const steerer = isOperator(caller) ? undefined : await this.steererOf(caller);
    if (steerer) await admitSteered(asked, steerer, this.runs);
    const helper = isOperator(caller) || steerer ? undefined : await this.admitHelper(asked, caller);
    const a = helper ? { ...asked, agent: helper.agent } : asked;
    // Agent CLIs run in a terminal the manager owns; the echo agent is a plain process.
    const terminal = a.terminal ?? (runtimeNamed(a.agent) ? "tmux" : "process");
    await this.admit(a.agent, terminal);
    const cwd = helper?.cwd ?? a.cwd ?? (steerer ? (this.o.folder ?? process.cwd()) : process.cwd());
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
    const agentFile = helper?.file ?? (a.persona ? loadAgentFile(cwd, a.persona) : undefined);
    const fm = agentFile?.frontmatter;
    const carried = this.takeCarried(a);
    const scope = seatScope(a, fm);
    const { role, channels } = scope;
    const model = a.model ?? fm?.model;
    // The spawn right of the seat's own credential: the operator's spawn or its agent file (never a helper's).
    const allowSpawn = helper ? [] : (a.allowSpawn ?? fm?.allowSpawn ?? []);
    const spawnLimit = allowSpawn.length ? (a.spawnLimit ?? fm?.spawnLimit) : undefined;
    // The spawn right pins its personas' agent files as they are now, where its helpers' are read.
    const pinned = allowSpawn.length ? personaDigests(cwd, allowSpawn) : undefined;
    const posture = a.posture ?? fm?.posture;
    if (posture === "supervised" && !runtimeNamed(a.agent)?.capabilities.approvals) throw unsupervisable(a.agent);
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
      await this.supervisor.start(seat, files, 0, [], opening, carried?.file);
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

  /** `who`'s principal id when it is a person with the steer right (docs/security.md, People), else undefined. */
  private async steererOf(who: Principal): Promise<string | undefined> {
    return steers(await this.grantOf(who)) ? principalId(who) : undefined;
  }

  /** What the mesh service minted `who` with (its channels, role and spawn right). */
  private grantOf(who: Principal): Promise<SpawnGrant> {
    return callControl(this.nc, this.o.space, "grant", this.o.caller ?? SERVICE_PRINCIPALS.cli, { name: principalId(who) });
  }

  /**
   * The seat log as it stands now, for a spawner: its own seat (on any manager) and every seat that
   * answers to it, each holding its name. Read from the log rather than this manager's table, which
   * knows other managers' seats only as they were at its start.
   */
  private async spawnerState(id: string): Promise<{ spawner?: SeatRecord; helpers: SeatRecord[] }> {
    const all = [...(await this.seatLog.replay()).values()].map(projectSeat).filter((r): r is SeatRecord => !!r && holdsName(r));
    const spawner = all.find((r) => r.seat === id);
    return { ...(spawner ? { spawner } : {}), helpers: all.filter((r) => r.spawnedBy === id) };
  }

  /**
   * Where a spawner's helpers work and read their agent files: beside it when it is a seat of this
   * manager, else the manager's folder. A spawner that is another manager's seat spawns there.
   */
  private placeOf(id: string, spawner: SeatRecord | undefined): string {
    if (spawner && spawner.manager !== this.o.instance)
      throw new SeatRefusedError(
        "not-your-manager",
        `${id} is a seat of manager ${spawner.manager ?? "unknown"}: its helpers run there, beside it (so they retire with it); nothing was done here.`,
        `Call manager ${spawner.manager ?? "<instance>"} (cotal_spawn does, from a managed seat).`,
      );
    return spawner?.spec.cwd ?? this.o.folder ?? process.cwd();
  }

  /** A spawner that is a seat with a persona: its agent file, to compare its helpers' tools with. */
  private spawnerFile(spawner: SeatRecord | undefined): AgentFrontmatter | undefined {
    return spawner?.persona ? loadAgentFile(spawner.spec.cwd ?? this.o.folder ?? process.cwd(), spawner.persona).frontmatter : undefined;
  }

  /**
   * Admit a helper an agent asks for (docs/manager.md, Helpers), refusing before anything is
   * claimed: operator-only arguments; a persona its credential does not name (the broker already
   * refused a credential without the spawn right); its seat limit; a helper wider than it; the
   * budget gates.
   */
  private async admitHelper(
    a: SpawnRequest,
    caller: Principal,
  ): Promise<{ agent: SeatAgent; cwd: string; file: AgentFile; fm: AgentFrontmatter; spawnedBy: string; spawnerUid?: string }> {
    const id = principalId(caller);
    refuseOperatorOnly(id, a);
    const grant = await this.grantOf(caller);
    refuseUngranted(id, grant, a.persona);
    const { spawner, helpers } = await this.spawnerState(id);
    const cwd = this.placeOf(id, spawner);
    refuseOverLimit(
      id,
      grant,
      helpers.map((h) => seatName(h.seat)),
    );
    const file = loadAgentFile(cwd, a.persona);
    refuseUnpinned(id, grant, a.persona, file.digest);
    const fm = file.frontmatter;
    const agent = helperAgent(a.agent, fm, a.persona);
    refuseWider(id, a.persona, widerThan({ ...seatScope(a, fm), agent, fm }, grant, this.spawnerFile(spawner)));
    const refused = await this.runs?.spawnGate(agent !== "echo");
    if (refused) {
      this.o.log.warn({ spawner: id, cap: refused.cap, spentUsd: refused.spentUsd }, "helper refused by a budget gate");
      throw new SeatRefusedError("budget", refused.message, "Wait for the next UTC day, or ask the operator to raise the cap (`cotal budget`, docs/runs.md).");
    }
    return { agent, cwd, file, fm, spawnedBy: id, ...(spawner ? { spawnerUid: spawner.uid } : {}) };
  }

  /**
   * The personas a spawner may spawn, as its helpers' folder holds them: each agent file's name,
   * runtime, role and channels, or why it cannot be spawned (missing, invalid, wider than the
   * spawner). The operator may spawn any: every agent file of the manager's folder.
   */
  private async personas(caller: Principal) {
    const id = principalId(caller);
    const asked = isOperator(caller) ? undefined : await this.grantOf(caller);
    // A steering person lists the personas as the operator does: every agent file of the manager's folder.
    const grant = asked && steers(asked) ? undefined : asked;
    if (grant) refuseWithoutRight(id, grant);
    const { spawner, helpers } = await this.spawnerState(id);
    const cwd = this.placeOf(id, spawner);
    const spawnerFile = grant ? this.spawnerFile(spawner) : undefined;
    const names = grant?.allowSpawn ?? agentFilesIn(cwd);
    const hide = (t: string) => (grant ? redactHostPaths(t, { stateDir: this.o.stateDir, cwd }) : t);
    const personas = names.map((persona): PersonaInfo => {
      try {
        const file = loadAgentFile(cwd, persona);
        const fm = file.frontmatter;
        const runtime = fm.runtime ?? DEFAULT_RUNTIME.name;
        const unpinned = grant ? pinProblem(grant, persona, file.digest) : undefined;
        const wider = grant ? widerThan({ ...seatScope({ channels: [] }, fm), agent: runtime as SeatAgent, fm }, grant, spawnerFile) : [];
        return {
          persona,
          name: fm.name,
          runtime,
          ...(fm.role ? { role: fm.role } : {}),
          channels: fm.subscribe,
          ...(fm.description ? { description: fm.description.slice(0, 1000) } : {}),
          ...(unpinned ? { problem: unpinned } : wider.length ? { problem: `a helper of it would be wider than you: ${wider.join("; ")}` } : {}),
        };
      } catch (err) {
        return { persona, name: persona, runtime: "-", channels: [], problem: hide((err as Error).message) };
      }
    });
    return { instance: this.o.instance, personas, limit: grant ? spawnLimitOf(grant) : (this.o.maxSeats ?? 32), held: helpers.length };
  }

  /**
   * Hand a helper over (docs/manager.md, Helpers): its spawner (or the operator) makes another agent
   * answer for it, who must be allowed to spawn its persona, within that agent's limit and scope;
   * or, with no `to`, the operator. Either way it no longer retires with its spawner.
   */
  private async handover(a: Args<"handover">, caller: Principal) {
    const seat = `local.${a.name}`;
    const r = this.ownedSeat(a.name, caller, "handed over");
    const from = r.spawnedBy;
    if (!from)
      throw new SeatRefusedError(
        "not-a-helper",
        `${a.name} is not a helper: no agent answers for it (the operator does); nothing changed.`,
        "Only helpers are handed over (`cotal ps` names who spawned each).",
      );
    if (a.to === from)
      throw new SeatRefusedError(
        "not-a-handover",
        `${from} already answers for ${a.name}; nothing changed.`,
        "Name another agent, or leave `to` out for the operator.",
      );
    let toUid: string | undefined;
    if (a.to) {
      const grant = await this.grantOf(parsePrincipal(a.to));
      refuseUngranted(a.to, grant, r.persona);
      const { spawner, helpers } = await this.spawnerState(a.to);
      const cwd = this.placeOf(a.to, spawner);
      refuseOverLimit(
        a.to,
        grant,
        helpers.map((h) => seatName(h.seat)),
      );
      const fm = loadAgentFile(r.spec.cwd ?? cwd, r.persona).frontmatter;
      refuseWider(
        a.to,
        r.persona,
        widerThan({ ...seatScope({ role: r.role, channels: r.spec.channels }, fm), agent: r.agent, fm }, grant, this.spawnerFile(spawner)),
      );
      toUid = spawner?.uid;
    }
    await this.append(seat, {
      type: "handed-over",
      seat,
      uid: r.uid,
      epoch: r.epoch,
      ts: Date.now(),
      from,
      ...(a.to ? { to: a.to } : {}),
      ...(toUid ? { toUid } : {}),
    });
    this.o.log.info({ seat, from, to: a.to ?? "the operator", by: principalId(caller) }, "helper handed over");
    return { seat, uid: r.uid, from, ...(a.to ? { to: a.to } : {}) };
  }

  /** A `--resume` spawn's claim, taken once (before anything is claimed); refused for echo seats. */
  private takeCarried(a: SpawnRequest): StagedTranscript | undefined {
    if (a.resume === undefined) return undefined;
    const adapter = runtimeNamed(a.agent);
    if (!adapter?.capabilities.carry)
      throw new SeatRefusedError(
        "resume-unavailable",
        `${adapter ? `${adapter.label} seats cannot resume a carried session (docs/runtimes.md)` : "Only agent CLI seats resume a carried session"}; nothing was started.`,
        `Leave out --resume, or spawn a ${DEFAULT_RUNTIME.name} seat.`,
      );
    return this.carry.take(a.claim, a.resume);
  }

  /** Refuse, before anything runs, an agent or terminal host this manager cannot start. */
  private async admit(agent: SeatAgent, terminal: string): Promise<void> {
    refuseUnknownAgent(agent);
    if (agent === "echo" && terminal !== "process") {
      throw new SeatRefusedError(
        "terminal-unavailable",
        `The echo agent runs headless (terminal process), not ${terminal}; nothing was started.`,
        "Spawn echo seats with --terminal process (the default).",
      );
    }
    const adapter = runtimeNamed(agent);
    if (adapter) {
      if (terminal !== "tmux" && terminal !== "pty")
        throw new SeatRefusedError(
          "terminal-unavailable",
          `${adapter.label} seats run in a terminal the manager owns (tmux or pty), not ${terminal}; nothing was started.`,
          `Use --terminal tmux (the default for ${adapter.name}) or --terminal pty.`,
        );
      const host = this.hosts.get(adapter.name);
      if (!host)
        throw new SeatRefusedError(
          "agent-unavailable",
          `Manager ${this.o.instance} cannot start ${adapter.label} seats (no ${adapter.command} executable or plugin tree configured); nothing was started.`,
          adapter.installHint,
        );
      refuseWithoutAuth(this.o.instance, adapter, host, "seat");
      if (terminal === "tmux") await TmuxServer.check();
      else await checkScript();
    }
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
    const steerer = isOperator(caller) ? undefined : await this.steererOf(caller);
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

/** The agent files (`.cotal/agents/*.md`) of a folder, by persona name. */
function agentFilesIn(cwd: string): string[] {
  try {
    return readdirSync(join(cwd, ".cotal", "agents"))
      .filter((f) => f.endsWith(".md"))
      .map((f) => f.slice(0, -3))
      .sort();
  } catch {
    return [];
  }
}

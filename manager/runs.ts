// The manager's `run` and `budget` commands (docs/runs.md): budget gates over the runs the seat
// log recorded, then up to maxParallel headless Claude runs at once, each recorded with its cost
// on its own seat-log subject (`…seat.cotal_run.<runId>`), so every manager, and a restarted
// one, adds up the same spending.
import { join } from "node:path";
import type { NatsConnection } from "@nats-io/transport-node";
import { SERVICE_PRINCIPALS, type Logger } from "../broker/index.js";
import { loadAgentFile, type AgentFile, DEFAULT_RUNTIME, runtimeNamed } from "../runtimes/index.js";
import {
  COST_BASIS,
  MAX_RUN_COST_USD,
  type BudgetRefusal,
  type BudgetReply,
  type Principal,
  type RunReply,
  type RunResult,
  type TableParsedArgs,
  type MANAGER_COMMANDS,
} from "../schemas/index.js";
import { checkGates, capsFromEnv, gauge, headroom, medianRunCost, utcDay, type BudgetCaps, type RunRecord } from "./budget.js";
import type { RuntimeAdapter, RuntimeHost } from "../runtime/index.js";
import { hostsOf, refuseWithoutAuth } from "./runtime-checks.js";
import { SeatRefusedError } from "./errors.js";
import { newLifecycleUid } from "./lifecycle-uid.js";
import { executeRun } from "./run.js";
import { redactHostPaths } from "./host-paths.js";
import { SeatLog } from "./seat-log.js";

type RunArgs = TableParsedArgs<typeof MANAGER_COMMANDS, "run">;
type BudgetArgs = TableParsedArgs<typeof MANAGER_COMMANDS, "budget">;

/** The seat-log owner token under which runs are recorded: `cotal.<space>.seat.cotal_run.<runId>.<writer>`. */
export const RUN_OWNER = "cotal_run";

export interface RunServiceOptions {
  space: string;
  instance: string;
  stateDir: string;
  /** The connection JetStream requests go over. */
  jsConnection: NatsConnection;
  /** The runtimes this manager can start, by name (runtimes/): where each one's CLI is (absent: refused, saying why). */
  runtimes?: Readonly<Record<string, RuntimeHost>> | undefined;
  /** The caps (default: COTAL_DAILY_BUDGET_USD / COTAL_TASK_BUDGET_USD from the manager's environment). */
  budget?: BudgetCaps | undefined;
  /** The manager's own principal, which writes its run records (default: the operator's). */
  caller?: Principal | undefined;
  /** Runs at once on this manager, over every request (default 8); more wait for a free slot. */
  maxRuns?: number | undefined;
  log: Logger;
}

/** One run of a batch: the persona to run and what every run of the batch shares. */
interface RunJob {
  /** The persona's runtime and where its CLI is on this host. */
  adapter: RuntimeAdapter;
  host: RuntimeHost;
  a: RunArgs;
  persona: string;
  file: AgentFile;
  cwd: string;
  caller: Principal;
  /** The median cost of recent runs, the estimate the gates reserve. */
  median: number;
}

interface InFlight {
  estimateUsd: number;
  task?: string | undefined;
}

/** Serves `run` and `budget` for one manager. */
export class RunService {
  private readonly inFlight = new Map<string, InFlight>();
  /** Slots taken by runs, and the runs waiting for one (manager-wide: a request's maxParallel cannot pass it). */
  private running = 0;
  private readonly waiting: Array<() => void> = [];
  private readonly caps: BudgetCaps;
  private stopped = false;

  private constructor(
    private readonly o: RunServiceOptions,
    private readonly seatLog: SeatLog,
  ) {
    this.caps = o.budget ?? capsFromEnv(process.env);
  }

  static async open(o: RunServiceOptions): Promise<RunService> {
    return new RunService(o, await SeatLog.open(o.jsConnection, o.space, o.log, o.caller ?? SERVICE_PRINCIPALS.cli));
  }

  /** Refuse new runs (runs in flight end at their timeout at the latest, their process groups with them). */
  stop(): void {
    this.stopped = true;
  }

  /**
   * Every run the seat log holds (the stream's retention bounds it), each written by the manager
   * it names (its subject proves it: SeatLog skips the rest), at most MAX_RUN_COST_USD and not
   * dated in the future.
   */
  async records(): Promise<RunRecord[]> {
    const out: RunRecord[] = [];
    for await (const { event } of this.seatLog.events(RUN_OWNER)) if (event.type === "run") out.push(event);
    return out;
  }

  /**
   * The estimate of one run: the median of this manager's own recent runs. Spending is added up
   * over every manager's runs, but the estimate is not: a manager could record runs of its own at
   * no cost and drag a shared median to 0, letting a fan-out pass a cap it should fail.
   */
  private median(runs: readonly RunRecord[]): number {
    return medianRunCost(runs.filter((r) => r.manager === this.o.instance));
  }

  async budget(a: BudgetArgs): Promise<BudgetReply> {
    const runs = await this.records();
    const now = Date.now();
    const today = runs.filter((r) => utcDay(r.ts) === utcDay(now));
    const tasks = a.task !== undefined ? [a.task] : [...new Set(today.map((r) => r.task).filter((t): t is string => t !== undefined))].sort();
    return {
      day: utcDay(now),
      daily: gauge(runs, "daily", this.caps.dailyUsd, { now }),
      tasks: tasks.map((task) => gauge(runs, "task", this.caps.taskUsd, { now, task })),
      medianRunUsd: this.median(runs),
      costBasis: COST_BASIS,
    };
  }

  /**
   * The budget gate a helper's spawn passes (docs/manager.md, Helpers): refused once a cap is
   * reached, or when one run's estimate (the median of this manager's runs; none for a helper that
   * runs no model) would pass it. Undefined: it may start.
   */
  async spawnGate(runsModel: boolean): Promise<BudgetRefusal | undefined> {
    const runs = await this.records();
    return checkGates(runs, this.caps, { now: Date.now(), estimateUsd: runsModel ? this.median(runs) : 0, reserved: this.reserved(undefined) });
  }

  async run(a: RunArgs, caller: Principal): Promise<RunReply> {
    if (this.stopped)
      throw new SeatRefusedError(
        "manager-stopping",
        `Manager ${this.o.instance} is stopping; nothing was started.`,
        "Run it on another manager, or again once this one is back.",
      );
    if (a.cwd !== undefined && !isOperator(caller)) {
      throw new SeatRefusedError(
        "cwd-not-allowed",
        `Only the operator chooses where a run works; ${caller.owner}.${caller.actor} may not pass cwd. Nothing was started.`,
        "Leave cwd out: the run then works in the manager's folder, with its agent files.",
      );
    }
    const cwd = a.cwd ?? process.cwd();
    // Agent files are read before the gate: a missing or invalid one refuses the request, unexecuted.
    const files = new Map<string, AgentFile>(a.personas.map((p) => [p, loadAgentFile(cwd, p)]));
    // Each persona's runtime must be startable here, or nothing of the batch starts.
    const runtimes = new Map(a.personas.map((p) => [p, this.runtimeFor(files.get(p)!)]));
    const jobs = a.personas.flatMap((persona) => Array.from({ length: a.parallel }, () => persona));

    const runs = await this.records();
    const median = this.median(runs);
    const estimateUsd = median * jobs.length;
    const refused = checkGates(runs, this.caps, { now: Date.now(), task: a.task, estimateUsd, reserved: this.reserved(a.task) });
    if (refused) {
      this.o.log.warn({ cap: refused.cap, spentUsd: refused.spentUsd, estimateUsd, runs: jobs.length }, "run refused by a budget gate");
      return {
        instance: this.o.instance,
        estimateUsd,
        refused,
        results: jobs.map((persona) => skipped(persona, refused.message, modelOf(a.model, files.get(persona)))),
      };
    }

    const results: RunResult[] = new Array<RunResult>(jobs.length);
    let next = 0;
    const worker = async (): Promise<void> => {
      for (let i = next++; i < jobs.length; i = next++)
        results[i] = await this.one({ ...runtimes.get(jobs[i]!)!, a, persona: jobs[i]!, file: files.get(jobs[i]!)!, cwd, caller, median });
    };
    await Promise.all(Array.from({ length: Math.min(a.maxParallel, jobs.length) }, worker));
    // Only the operator (on this host) sees this host's paths in a run's error.
    const shown = isOperator(caller)
      ? results
      : results.map((r) => (r.error ? { ...r, error: { ...r.error, message: this.redact(r.error.message, cwd) } } : r));
    return { instance: this.o.instance, estimateUsd, results: shown };
  }

  private redact(message: string, cwd: string): string {
    return redactHostPaths(message, { stateDir: this.o.stateDir, cwd });
  }

  private async slot(): Promise<() => void> {
    if (this.running >= (this.o.maxRuns ?? 8)) await new Promise<void>((r) => this.waiting.push(r));
    else this.running++;
    return () => {
      const next = this.waiting.shift();
      if (next)
        next(); // the slot passes on as it is
      else this.running--;
    };
  }

  /** One run of a batch: a slot, the gate again (earlier runs have spent by now), then start, record. */
  private async one(job: RunJob): Promise<RunResult> {
    const release = await this.slot();
    try {
      return await this.gatedRun(job);
    } finally {
      release();
    }
  }

  /** The adapter and host a persona runs with, refused (nothing started) when this manager cannot start its runtime or it has no credentials. */
  private runtimeFor(file: AgentFile): { adapter: RuntimeAdapter; host: RuntimeHost } {
    const adapter = file.frontmatter.runtime ? runtimeNamed(file.frontmatter.runtime) : DEFAULT_RUNTIME;
    const host = adapter ? hostsOf(this.o).get(adapter.name) : undefined;
    if (!adapter || !host) {
      const label = adapter?.label ?? file.frontmatter.runtime;
      throw new SeatRefusedError(
        "agent-unavailable",
        `Manager ${this.o.instance} cannot start ${label} (no executable or connector bundle configured); nothing was started.`,
        adapter?.installHint ?? "Name a runtime of docs/runtimes.md in the agent file.",
      );
    }
    refuseWithoutAuth(this.o.instance, adapter, host, "run");
    return { adapter, host };
  }

  private async gatedRun({ adapter, host, a, persona, file, cwd, caller, median }: RunJob): Promise<RunResult> {
    const { model, modelSource } = modelOf(a.model, file);
    const runs = await this.records();
    const reserved = this.reserved(a.task);
    const refused = checkGates(runs, this.caps, { now: Date.now(), task: a.task, estimateUsd: median, reserved });
    if (refused) return skipped(persona, refused.message, { model, modelSource });
    const maxBudgetUsd = headroom(runs, this.caps, { now: Date.now(), task: a.task, reserved });
    const runId = newLifecycleUid();
    this.inFlight.set(runId, { estimateUsd: median, task: a.task });
    try {
      const result = await executeRun(
        adapter,
        host,
        {
          runId,
          space: this.o.space,
          persona,
          agentFile: file,
          prompt: a.prompt,
          jsonSchema: a.jsonSchema,
          timeoutMs: a.timeoutMs,
          model,
          modelSource,
          cwd,
          maxBudgetUsd,
          fallbackCostUsd: median,
          runtimeDir: join(this.o.stateDir, "runs"),
        },
        this.o.log,
      );
      await this.record(result, a.task, caller);
      return result;
    } finally {
      this.inFlight.delete(runId);
    }
  }

  private reserved(task: string | undefined): { dailyUsd: number; taskUsd: number } {
    let dailyUsd = 0;
    let taskUsd = 0;
    for (const f of this.inFlight.values()) {
      dailyUsd += f.estimateUsd;
      if (task !== undefined && f.task === task) taskUsd += f.estimateUsd;
    }
    return { dailyUsd, taskUsd };
  }

  /** Append the run to the seat log; a run whose record failed is logged (its cost is then missing from the gauges). */
  private async record(r: RunResult, task: string | undefined, caller: Principal): Promise<void> {
    try {
      await this.seatLog.append(
        {
          type: "run",
          seat: `${RUN_OWNER}.${r.runId}`,
          uid: r.runId,
          epoch: 0,
          ts: Date.now(),
          manager: this.o.instance,
          status: r.status,
          // A cost past the bound would make the record invalid (and the run uncounted): counted at the bound instead.
          costUsd: Math.min(r.costUsd, MAX_RUN_COST_USD),
          costBasis: r.costBasis,
          latencyMs: r.latencyMs,
          modelSource: r.modelSource,
          by: `${caller.owner}.${caller.actor}`,
          ...(r.persona ? { persona: r.persona } : {}),
          ...(r.model ? { model: r.model } : {}),
          ...(task !== undefined ? { task } : {}),
          ...(r.usage ? { usage: r.usage } : {}),
          ...(r.sessionId ? { sessionId: r.sessionId } : {}),
          ...(r.error ? { errorKind: r.error.kind } : {}),
        },
        0,
      );
    } catch (err) {
      this.o.log.error({ err, run: r.runId, costUsd: r.costUsd }, "recording a run in the seat log failed: budgets will not count its cost");
    }
  }
}

/** Whether `p` is the operator's own principal (the mesh host's CLI credential): only it chooses where a run works. */
export function isOperator(p: Principal): boolean {
  return p.owner === SERVICE_PRINCIPALS.cli.owner && p.actor === SERVICE_PRINCIPALS.cli.actor;
}

/** The model a run asks for: explicit, else the agent file's, else its CLI's own default. */
export function modelOf(explicit: string | undefined, file: AgentFile | undefined): { model?: string; modelSource: RunResult["modelSource"] } {
  if (explicit) return { model: explicit, modelSource: "explicit" };
  if (file?.frontmatter.model) return { model: file.frontmatter.model, modelSource: "agent-file" };
  return { modelSource: "default" };
}

function skipped(persona: string, message: string, m: { model?: string | undefined; modelSource: RunResult["modelSource"] }): RunResult {
  return {
    runId: newLifecycleUid(),
    persona,
    status: "skipped",
    costUsd: 0,
    costBasis: COST_BASIS,
    latencyMs: 0,
    ...(m.model ? { model: m.model } : {}),
    modelSource: m.modelSource,
    permissionDenials: [],
    error: { kind: "budget", message },
  };
}

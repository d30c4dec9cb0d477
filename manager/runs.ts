// The manager's `run` and `budget` commands (docs/runs.md): budget gates over the runs the seat
// log recorded, then up to maxParallel headless Claude runs at once, each recorded with its cost
// on its own seat-log subject (`…seat.cotal_run.<runId>`), so every manager, and a restarted
// one, adds up the same spending.
import { join } from "node:path";
import type { NatsConnection } from "@nats-io/transport-node";
import { SERVICE_PRINCIPALS, type Logger } from "../broker/index.js";
import { loadAgentFile, type AgentFile } from "../claude/index.js";
import { COST_BASIS, type BudgetReply, type Principal, type RunReply, type RunResult, type TableParsedArgs, type MANAGER_COMMANDS } from "../schemas/index.js";
import { checkGates, capsFromEnv, gauge, headroom, medianRunCost, utcDay, type BudgetCaps, type RunRecord } from "./budget.js";
import type { ClaudeSeatOptions } from "./claude-seat.js";
import { SeatRefusedError } from "./errors.js";
import { newLifecycleUid } from "./lifecycle-uid.js";
import { executeRun } from "./run.js";
import { SeatLog } from "./seat-log.js";

type RunArgs = TableParsedArgs<typeof MANAGER_COMMANDS, "run">;
type BudgetArgs = TableParsedArgs<typeof MANAGER_COMMANDS, "budget">;

/** The seat-log owner token under which runs are recorded: `cotal.<space>.seat.cotal_run.<runId>`. */
export const RUN_OWNER = "cotal_run";

export interface RunServiceOptions {
  space: string;
  instance: string;
  stateDir: string;
  /** The connection JetStream requests go over. */
  jsConnection: NatsConnection;
  /** What runs start (absent: runs are refused, saying why). */
  claude?: ClaudeSeatOptions | undefined;
  /** The caps (default: COTAL_DAILY_BUDGET_USD / COTAL_TASK_BUDGET_USD from the manager's environment). */
  budget?: BudgetCaps | undefined;
  /** Runs at once on this manager, over every request (default 8); more wait for a free slot. */
  maxRuns?: number | undefined;
  log: Logger;
}

/** One run of a batch: the persona to run and what every run of the batch shares. */
interface RunJob {
  claude: ClaudeSeatOptions;
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
    return new RunService(o, await SeatLog.open(o.jsConnection, o.space, o.log));
  }

  /** Refuse new runs (runs in flight end at their timeout at the latest, their process groups with them). */
  stop(): void {
    this.stopped = true;
  }

  /** Every run the seat log holds (the stream's retention bounds it). */
  async records(): Promise<RunRecord[]> {
    const out: RunRecord[] = [];
    for await (const { event } of this.seatLog.events(RUN_OWNER)) if (event.type === "run") out.push(event);
    return out;
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
      medianRunUsd: medianRunCost(runs),
      costBasis: COST_BASIS,
    };
  }

  async run(a: RunArgs, caller: Principal): Promise<RunReply> {
    if (this.stopped)
      throw new SeatRefusedError(
        "manager-stopping",
        `Manager ${this.o.instance} is stopping; nothing was started.`,
        "Run it on another manager, or again once this one is back.",
      );
    const claude = this.o.claude;
    if (!claude) {
      throw new SeatRefusedError(
        "agent-unavailable",
        `Manager ${this.o.instance} cannot start Claude (no claude executable or connector bundle configured); nothing was started.`,
        "Install @anthropic-ai/claude-code where the manager runs (or set COTAL_CLAUDE_BIN), then restart the manager.",
      );
    }
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
    const jobs = a.personas.flatMap((persona) => Array.from({ length: a.parallel }, () => persona));

    const runs = await this.records();
    const median = medianRunCost(runs);
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
        results[i] = await this.one({ claude, a, persona: jobs[i]!, file: files.get(jobs[i]!)!, cwd, caller, median });
    };
    await Promise.all(Array.from({ length: Math.min(a.maxParallel, jobs.length) }, worker));
    return { instance: this.o.instance, estimateUsd, results };
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

  private async gatedRun({ claude, a, persona, file, cwd, caller, median }: RunJob): Promise<RunResult> {
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
        claude,
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
          costUsd: r.costUsd,
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

/** The model a run asks for: explicit, else the agent file's, else Claude's default. */
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

// Budget gates (docs/runs.md), as pure policy over the runs the seat log recorded: a daily cap
// over today's (UTC) run costs and a per-chain cap over the runs sharing a task marker. The
// estimate for N runs is the median cost of recent runs × N (0 with no history).
import { existsSync, readFileSync, statSync } from "node:fs";
import {
  BudgetConfig,
  CotalError,
  describeIssues,
  type BudgetCap,
  type BudgetGauge,
  type BudgetLevel,
  type BudgetRefusal,
  type SeatEvent,
} from "../schemas/index.js";

/** A run as the seat log recorded it. */
export type RunRecord = Extract<SeatEvent, { type: "run" }>;

/** The caps a manager enforces (absent: no cap of that kind). */
export interface BudgetCaps {
  /** USD per UTC day, over every recorded run. */
  dailyUsd?: number | undefined;
  /** USD per task marker (a chain of runs), over all its recorded runs. */
  taskUsd?: number | undefined;
}

/** How many recent runs the per-run estimate is the median of. */
export const ESTIMATE_WINDOW = 20;

/** The caps from the environment: COTAL_DAILY_BUDGET_USD and COTAL_TASK_BUDGET_USD (non-negative numbers; anything else is ignored). */
export function capsFromEnv(env: Readonly<Record<string, string | undefined>>): BudgetCaps {
  const usd = (k: string): number | undefined => {
    const raw = env[k]?.trim();
    if (!raw) return undefined;
    const v = Number(raw);
    return Number.isFinite(v) && v >= 0 ? v : undefined;
  };
  return { dailyUsd: usd("COTAL_DAILY_BUDGET_USD"), taskUsd: usd("COTAL_TASK_BUDGET_USD") };
}

/**
 * The caps a manager enforces: COTAL_DAILY_BUDGET_USD / COTAL_TASK_BUDGET_USD from `env`, else the
 * mesh's config file (`.cotal/budget.json`, BudgetConfig) when there is one. An invalid file is
 * refused, naming the field: a manager never runs with a cap it misread. The file is read again
 * whenever it changes (`cotal up -f` writes it while the manager runs, docs/team-file.md): the
 * caps returned are a live view of it, and a file made invalid later refuses the gate that reads it.
 */
export function budgetCaps(env: Readonly<Record<string, string | undefined>>, configFile?: string): BudgetCaps {
  const fromEnv = capsFromEnv(env);
  const read = (): BudgetCaps => {
    const config = configFile ? readBudgetConfig(configFile) : {};
    return { dailyUsd: fromEnv.dailyUsd ?? config.dailyUsd, taskUsd: fromEnv.taskUsd ?? config.taskUsd };
  };
  let caps = read();
  if (!configFile) return caps;
  let stamp = stampOf(configFile);
  const current = (): BudgetCaps => {
    const now = stampOf(configFile);
    if (now !== stamp) {
      caps = read();
      stamp = now;
    }
    return caps;
  };
  return {
    get dailyUsd() {
      return current().dailyUsd;
    },
    get taskUsd() {
      return current().taskUsd;
    },
  };
}

/** The file's identity for "has it changed": modification time and size (absent: "-"). */
function stampOf(file: string): string {
  const st = statSync(file, { throwIfNoEntry: false });
  return st ? `${st.mtimeMs}/${st.size}` : "-";
}

/** `.cotal/budget.json` (absent: no caps), or a refusal naming what is wrong in it. */
function readBudgetConfig(configFile: string): BudgetConfig {
  if (!existsSync(configFile)) return {};
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(configFile, "utf8"));
  } catch (cause) {
    throw new CotalError("invalid-budget-config", `The budget config ${configFile} is not valid JSON.`, {
      remedy: 'Write it as {"dailyUsd": 5, "taskUsd": 1} (either may be left out).',
      cause,
    });
  }
  const parsed = BudgetConfig.safeParse(json);
  if (!parsed.success)
    throw new CotalError("invalid-budget-config", `Invalid budget config ${configFile}: ${describeIssues(parsed.error).join("; ")}.`, {
      remedy: 'Write it as {"dailyUsd": 5, "taskUsd": 1} (either may be left out).',
    });
  return parsed.data;
}

/** The UTC day of a Unix ms time, `YYYY-MM-DD`. */
export function utcDay(ts: number): string {
  return new Date(ts).toISOString().slice(0, 10);
}

/** Median cost of the last ESTIMATE_WINDOW runs that ran (0 with none). */
export function medianRunCost(runs: readonly RunRecord[]): number {
  const costs = runs
    .filter((r) => r.status !== "skipped")
    .sort((a, b) => a.ts - b.ts)
    .slice(-ESTIMATE_WINDOW)
    .map((r) => r.costUsd)
    .sort((a, b) => a - b);
  if (!costs.length) return 0;
  const mid = Math.floor(costs.length / 2);
  return costs.length % 2 ? costs[mid]! : (costs[mid - 1]! + costs[mid]!) / 2;
}

/** ok < 50% ≤ info < 75% ≤ warning < 90% ≤ critical < 100% ≤ stop. */
export function levelOf(share: number): BudgetLevel {
  if (share >= 1) return "stop";
  if (share >= 0.9) return "critical";
  if (share >= 0.75) return "warning";
  if (share >= 0.5) return "info";
  return "ok";
}

const sum = (runs: readonly RunRecord[]) => runs.reduce((s, r) => s + r.costUsd, 0);

/** The runs a cap counts: today's (UTC) for the daily cap, the marker's for a task cap. */
export function runsUnder(runs: readonly RunRecord[], cap: BudgetCap, at: { now: number; task?: string | undefined }): RunRecord[] {
  if (cap === "daily") return runs.filter((r) => utcDay(r.ts) === utcDay(at.now));
  return runs.filter((r) => r.task !== undefined && r.task === at.task);
}

/** One gauge: what was spent against a cap and its level. */
export function gauge(runs: readonly RunRecord[], cap: BudgetCap, capUsd: number | undefined, at: { now: number; task?: string | undefined }): BudgetGauge {
  const counted = runsUnder(runs, cap, at);
  const spentUsd = sum(counted);
  const share = capUsd === undefined ? undefined : capUsd === 0 ? (spentUsd > 0 ? Infinity : 1) : spentUsd / capUsd;
  return {
    cap,
    ...(cap === "task" && at.task !== undefined ? { task: at.task } : {}),
    spentUsd,
    runs: counted.length,
    ...(capUsd !== undefined ? { capUsd, share: Number.isFinite(share) ? share! : 1, level: levelOf(share!) } : {}),
  };
}

/**
 * The gate: before starting `count` runs, compare spent (+ what runs in flight reserved) +
 * estimate with each cap. A cap already reached refuses even a zero estimate. Returns the
 * first refusal (daily, then task), or undefined when the work may start.
 */
export function checkGates(
  runs: readonly RunRecord[],
  caps: BudgetCaps,
  work: { now: number; task?: string | undefined; estimateUsd: number; reserved?: { dailyUsd: number; taskUsd: number } },
): BudgetRefusal | undefined {
  const checks: Array<[BudgetCap, number | undefined, number]> = [
    ["daily", caps.dailyUsd, work.reserved?.dailyUsd ?? 0],
    ...(work.task !== undefined ? ([["task", caps.taskUsd, work.reserved?.taskUsd ?? 0]] as Array<[BudgetCap, number | undefined, number]>) : []),
  ];
  for (const [cap, capUsd, reserved] of checks) {
    if (capUsd === undefined) continue;
    const spentUsd = sum(runsUnder(runs, cap, work)) + reserved;
    if (spentUsd >= capUsd || spentUsd + work.estimateUsd > capUsd) {
      const what = cap === "daily" ? `the daily cap (UTC ${utcDay(work.now)})` : `the cap of task ${work.task}`;
      return {
        cap,
        capUsd,
        spentUsd,
        estimateUsd: work.estimateUsd,
        ...(cap === "task" ? { task: work.task } : {}),
        message:
          `Refused by ${what}: $${usd(spentUsd)} spent${reserved > 0 ? ` (runs in flight included)` : ""} + $${usd(work.estimateUsd)} estimated ` +
          `would pass $${usd(capUsd)}; nothing was started.`,
      };
    }
  }
  return undefined;
}

/** The most a run may spend so that spent + reserved stays under every cap that applies (undefined: no cap). */
export function headroom(
  runs: readonly RunRecord[],
  caps: BudgetCaps,
  at: { now: number; task?: string | undefined; reserved: { dailyUsd: number; taskUsd: number } },
): number | undefined {
  const rooms: number[] = [];
  if (caps.dailyUsd !== undefined) rooms.push(caps.dailyUsd - sum(runsUnder(runs, "daily", at)) - at.reserved.dailyUsd);
  if (caps.taskUsd !== undefined && at.task !== undefined) rooms.push(caps.taskUsd - sum(runsUnder(runs, "task", at)) - at.reserved.taskUsd);
  return rooms.length ? Math.max(0, Math.min(...rooms)) : undefined;
}

/** Dollars for people: 4 decimals (runs often cost cents). */
export function usd(v: number): string {
  return v.toFixed(4);
}

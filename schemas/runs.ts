import { z } from "zod";
import { PrincipalToken } from "./tokens.js";

/** How one run ended (docs/runs.md). `skipped`: a budget gate refused it before it started. */
export const RunStatus = z.enum(["ok", "timeout", "error", "skipped"]);
export type RunStatus = z.infer<typeof RunStatus>;

/**
 * Why a run that did not end `ok` ended so: each way to fail has its own kind, so a caller
 * decides by it, never by the message.
 */
export const RunErrorKind = z.enum([
  "timeout", // it ran past its timeout and was killed (the whole process group)
  "schema-violation", // the output did not match the JSON schema (its CLI gave up retrying)
  "no-result", // it ended without a result: no structured output for a schema, or no JSON on stdout
  "killed", // its process was killed by a signal it was not sent for a timeout
  "budget", // it stopped at its --max-budget-usd, or a gate refused it (skipped)
  "failed", // the CLI reported an error result, or could not be started
]);
export type RunErrorKind = z.infer<typeof RunErrorKind>;

/** Where a run's model came from: the request, the agent file, or its CLI's own default. */
export const ModelSource = z.enum(["explicit", "agent-file", "default"]);
export type ModelSource = z.infer<typeof ModelSource>;

/** The label on a cost the agent CLI reported: it computes it on the client from token counts and list prices. */
export const COST_BASIS = "client-estimate" as const;

/**
 * Where a run's cost comes from: `client-estimate`, the agent CLI's own (Claude: `total_cost_usd`);
 * `median-estimate`, the CLI reported none (killed for its timeout, or by a signal), so the run is
 * counted at the median cost of recent runs rather than as free; `usage`, the CLI reports token
 * usage but no price (Codex: docs/runtimes.md), so the run counts 0 USD and `usage` says what it used.
 */
export const CostBasis = z.enum([COST_BASIS, "median-estimate", "usage"]);
export type CostBasis = z.infer<typeof CostBasis>;

/** A run's cost for people: dollars and what they rest on. */
export function describeCost(r: { costUsd: number; costBasis: CostBasis }): string {
  if (r.costBasis === "usage") return "unpriced (the CLI reports token usage, not dollars)";
  return `$${r.costUsd.toFixed(4)} (${r.costBasis === COST_BASIS ? "client-side estimate" : "median of recent runs: its CLI reported no cost"})`;
}

/** Token counts as the agent CLI reports them (Claude's `usage` field names). */
export const RunUsage = z
  .object({
    input_tokens: z.number().nonnegative().optional(),
    output_tokens: z.number().nonnegative().optional(),
    cache_creation_input_tokens: z.number().nonnegative().optional(),
    cache_read_input_tokens: z.number().nonnegative().optional(),
  })
  .describe("token counts the agent CLI reported (in Claude's field names)");
export type RunUsage = z.infer<typeof RunUsage>;

/** A budget cap a gate measures against. */
export const BudgetCap = z.enum(["daily", "task"]);
export type BudgetCap = z.infer<typeof BudgetCap>;

/** One run's typed result. */
export const RunResult = z.object({
  runId: z.string(),
  persona: PrincipalToken.optional(),
  status: RunStatus,
  output: z.unknown().optional().describe("the parsed structured output when a JSON schema was given, else the CLI's result text"),
  costUsd: z
    .number()
    .nonnegative()
    .describe("what the run cost: the agent CLI's client-side estimate, or the median of recent runs when it reported none (costBasis says which)"),
  costBasis: CostBasis,
  usage: RunUsage.optional(),
  sessionId: z.string().optional(),
  latencyMs: z.number().int().nonnegative(),
  model: z.string().optional().describe("the model asked for (absent: its CLI's default)"),
  modelSource: ModelSource,
  permissionDenials: z.array(z.string()).describe("tools the run was denied (dontAsk: not on its allow-list, or the deny floor)"),
  error: z.object({ kind: RunErrorKind, message: z.string() }).optional(),
});
export type RunResult = z.infer<typeof RunResult>;

/** Why a gate refused: the cap, what was spent against it, and what the work was estimated at. */
export const BudgetRefusal = z.object({
  cap: BudgetCap,
  capUsd: z.number().nonnegative(),
  spentUsd: z.number().nonnegative(),
  estimateUsd: z.number().nonnegative(),
  task: z.string().optional(),
  message: z.string(),
});
export type BudgetRefusal = z.infer<typeof BudgetRefusal>;

/** A gauge's level by share of its cap: ok < 50% ≤ info < 75% ≤ warning < 90% ≤ critical < 100% ≤ stop. */
export const BudgetLevel = z.enum(["ok", "info", "warning", "critical", "stop"]);
export type BudgetLevel = z.infer<typeof BudgetLevel>;

export const BudgetGauge = z.object({
  cap: BudgetCap,
  task: z.string().optional(),
  spentUsd: z.number().nonnegative(),
  capUsd: z.number().nonnegative().optional().describe("absent: no cap is set"),
  share: z.number().nonnegative().optional().describe("spent / cap"),
  level: BudgetLevel.optional(),
  runs: z.number().int().nonnegative(),
});
export type BudgetGauge = z.infer<typeof BudgetGauge>;

/** A task marker: names a chain of runs whose spending shares one cap. */
export const TaskMarker = z.string().regex(/^[A-Za-z0-9_.:-]{1,128}$/, "a task marker is 1-128 letters, digits, '_', '.', ':' or '-'");

export const RunArgs = z.object({
  personas: z.array(PrincipalToken).min(1).max(32).describe("agent files `.cotal/agents/<persona>.md` under cwd; each runs `parallel` times"),
  prompt: z.string().min(1).max(100_000),
  jsonSchema: z.record(z.string(), z.unknown()).optional().describe("a JSON Schema object: the output must match it, and is returned parsed"),
  timeoutMs: z.number().int().min(1_000).max(3_600_000).default(300_000),
  model: z.string().min(1).max(200).optional(),
  task: TaskMarker.optional().describe("a chain marker: runs sharing it share the per-task cap"),
  parallel: z.number().int().min(1).max(32).default(1).describe("copies of each persona's run"),
  maxParallel: z.number().int().min(1).max(32).default(4).describe("runs at once, at most"),
  cwd: z.string().min(1).max(4096).optional().describe("absolute folder on the manager's host (operator only; default the manager's working directory)"),
});

export const RunReply = z.object({
  instance: z.string(),
  results: z.array(RunResult),
  estimateUsd: z.number().nonnegative().describe("median recent run cost × the number of runs, checked against the caps before starting"),
  refused: BudgetRefusal.optional().describe("set when a gate refused the whole request: every result is then skipped"),
});
export type RunReply = z.infer<typeof RunReply>;

export const BudgetArgs = z.object({ task: TaskMarker.optional() });
export const BudgetReply = z.object({
  day: z.string().describe("the UTC day the daily gauge counts (YYYY-MM-DD)"),
  daily: BudgetGauge,
  tasks: z.array(BudgetGauge).describe("the asked task's gauge, else every task marker with runs today"),
  medianRunUsd: z.number().nonnegative().describe("median cost of recent runs: the per-run estimate"),
  costBasis: z.literal(COST_BASIS),
});
export type BudgetReply = z.infer<typeof BudgetReply>;

/** `.cotal/budget.json` beside the mesh: the caps its managers enforce (the environment's COTAL_*_BUDGET_USD win). */
export const BudgetConfig = z
  .strictObject({
    dailyUsd: z.number().nonnegative().optional().describe("USD per UTC day over every recorded run"),
    taskUsd: z.number().nonnegative().optional().describe("USD per task marker over its recorded runs"),
  })
  .describe("the mesh's run budget caps");
export type BudgetConfig = z.infer<typeof BudgetConfig>;

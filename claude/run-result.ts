// What `claude -p --output-format json` prints, mapped to the typed RunResult (docs/runs.md): a
// schema violation, a missing result, a kill and a timeout each differ. Moved here from the
// manager's run executor: reading a runtime's output is its adapter's business.
import { failedRun, timeoutMessage, type RunExit, type RunSpecView } from "../runtime/index.js";
import { COST_BASIS, type RunErrorKind, type RunResult, type RunUsage } from "../schemas/index.js";

/** What the Claude CLI prints with `-p --output-format json` (the fields read). */
interface ClaudeJson {
  subtype?: string;
  is_error?: boolean;
  result?: string;
  structured_output?: unknown;
  session_id?: string;
  total_cost_usd?: number;
  usage?: Record<string, unknown>;
  permission_denials?: Array<{ tool_name?: string }>;
  terminal_reason?: string;
  errors?: string[];
}

const STDERR_TAIL = 4_096;

/** Map a finished run's process exit and output to its typed result. Pure. */
export function runResultOf(spec: RunSpecView, exit: RunExit): RunResult {
  let json: ClaudeJson | undefined;
  try {
    const parsed: unknown = JSON.parse(exit.stdout);
    if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) json = parsed as ClaudeJson;
  } catch {
    json = undefined;
  }
  const reported = typeof json?.total_cost_usd === "number" && json.total_cost_usd >= 0 ? json.total_cost_usd : undefined;
  const base = {
    runId: spec.runId,
    ...(spec.persona ? { persona: spec.persona } : {}),
    ...(reported !== undefined ? { costUsd: reported, costBasis: COST_BASIS } : { costUsd: spec.fallbackCostUsd ?? 0, costBasis: "median-estimate" as const }),
    ...(json?.usage ? { usage: usageOf(json.usage) } : {}),
    ...(typeof json?.session_id === "string" ? { sessionId: json.session_id } : {}),
    latencyMs: exit.latencyMs,
    ...(spec.model ? { model: spec.model } : {}),
    modelSource: spec.modelSource,
    permissionDenials: [...new Set((json?.permission_denials ?? []).map((d) => d.tool_name).filter((t): t is string => typeof t === "string"))],
  };
  const failed = (status: "error" | "timeout", kind: RunErrorKind, message: string): RunResult => failedRun(base, status, kind, message);
  if (exit.timedOut) return failed("timeout", "timeout", timeoutMessage(spec.timeoutMs));
  if (!json) {
    if (exit.signal) return failed("error", "killed", `The run's process was killed by ${exit.signal} before it printed a result.`);
    return failed("error", "no-result", `Claude exited with code ${exit.code ?? "unknown"} without a JSON result${tail(exit.stderr)}.`);
  }
  const reason = json.errors?.filter((e) => typeof e === "string").join("; ") || json.result || json.terminal_reason || json.subtype || "no reason given";
  if (json.subtype === "error_max_structured_output_retries") return failed("error", "schema-violation", `The output did not match the JSON schema: ${reason}`);
  if (json.subtype === "error_max_budget_usd") return failed("error", "budget", `The run stopped at its spending limit (--max-budget-usd): ${reason}`);
  if (json.is_error || (json.subtype !== undefined && json.subtype !== "success"))
    return failed("error", "failed", `Claude reported an error (${json.subtype ?? "error"}): ${reason}`);
  if (spec.jsonSchema) {
    if (json.structured_output === undefined)
      return failed("error", "no-result", "The run ended without structured output, though a JSON schema was given (the model never returned it).");
    return { ...base, status: "ok", output: json.structured_output };
  }
  if (typeof json.result !== "string") return failed("error", "no-result", "The run ended without a result text.");
  return { ...base, status: "ok", output: json.result };
}

function usageOf(u: Record<string, unknown>): RunUsage {
  const out: RunUsage = {};
  for (const k of ["input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"] as const) {
    const v = u[k];
    if (typeof v === "number" && v >= 0) out[k] = v;
  }
  return out;
}

function tail(stderr: string): string {
  const t = stderr.trim().slice(-STDERR_TAIL);
  return t ? `: ${t}` : "";
}

// What `codex exec --json` prints (one JSON event a line), mapped to the typed RunResult
// (docs/runs.md, docs/runtimes.md). Codex reports token usage, not dollars: a run's costBasis is
// `usage` and its costUsd 0, unless it was killed (then the median of recent runs, as for Claude).
import { failedRun, jsonObjectLines, runBase, timeoutMessage, unfinishedRun, type RunExit, type RunSpecView } from "../runtime/index.js";
import { type RunErrorKind, type RunResult, type RunUsage } from "../schemas/index.js";

/** The events read (thread.started, item.completed agent_message, turn.completed/failed, error). */
interface CodexEvent {
  type?: string;
  thread_id?: string;
  item?: { type?: string; text?: string; message?: string };
  usage?: Record<string, unknown>;
  error?: { message?: string };
  message?: string;
}

/** Codex's usage fields, in the RunUsage names (cached input tokens are cache reads). */
function usageOf(u: Record<string, unknown>): RunUsage {
  const n = (k: string): number | undefined => (typeof u[k] === "number" && (u[k] as number) >= 0 ? (u[k] as number) : undefined);
  const out: RunUsage = {};
  const input = n("input_tokens");
  const output = n("output_tokens");
  const cached = n("cached_input_tokens");
  if (input !== undefined) out.input_tokens = input;
  if (output !== undefined) out.output_tokens = output;
  if (cached !== undefined) out.cache_read_input_tokens = cached;
  return out;
}

/** Map a finished `codex exec --json` to its typed result. Pure. */
export function codexRunResultOf(spec: RunSpecView, exit: RunExit): RunResult {
  const events = jsonObjectLines<CodexEvent>(exit.stdout);
  const thread = events.find((e) => e.type === "thread.started")?.thread_id;
  const texts = events.filter((e) => e.type === "item.completed" && e.item?.type === "agent_message" && typeof e.item.text === "string");
  const completed = events.filter((e) => e.type === "turn.completed" && e.usage);
  const usage = completed.length ? usageOf(completed[completed.length - 1]!.usage!) : undefined;
  const base = runBase(spec, exit, { finished: completed.length > 0, costUsd: 0, costBasis: "usage", usage, sessionId: thread });
  const failed = (status: "error" | "timeout", kind: RunErrorKind, message: string): RunResult => failedRun(base, status, kind, message);
  if (exit.timedOut) return failed("timeout", "timeout", timeoutMessage(spec.timeoutMs));
  const failure = events.find((e) => e.type === "turn.failed" || e.type === "error");
  if (failure) return failed("error", "failed", `Codex reported an error: ${failure.error?.message ?? failure.message ?? "no reason given"}`);
  if (!events.length || !completed.length) return unfinishedRun(base, exit, "Codex", "without finishing a turn");
  const last = texts[texts.length - 1]?.item?.text;
  if (last === undefined) return failed("error", "no-result", "The run ended without a final message.");
  if (spec.jsonSchema) {
    try {
      return { ...base, status: "ok", output: JSON.parse(last) as unknown };
    } catch {
      return failed("error", "schema-violation", "The final message is not JSON, though a JSON schema was given.");
    }
  }
  return { ...base, status: "ok", output: last };
}

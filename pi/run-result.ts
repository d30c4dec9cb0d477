// What `pi -p --mode json` prints (docs/json.md of pi 0.73.1: a `session` header line, then
// every agent event as a JSON line), mapped to the typed RunResult (docs/runs.md,
// docs/runtimes.md). pi prices each model call from its model list (models.json's `cost`, zero when
// it names none): the run's cost is that client estimate summed over its assistant messages, as is
// its token usage.
import { failedRun, jsonObjectLines, runBase, timeoutMessage, unfinishedRun, type RunExit, type RunSpecView } from "../runtime/index.js";
import type { RunResult, RunUsage } from "../schemas/index.js";

interface PiUsage {
  input?: number;
  output?: number;
  cacheRead?: number;
  cacheWrite?: number;
  cost?: { total?: number };
}

interface PiEvent {
  type?: string;
  id?: string;
  message?: { role?: string; content?: Array<{ type?: string; text?: string }>; usage?: PiUsage; stopReason?: string; errorMessage?: string };
}

const count = (n: unknown): number => (typeof n === "number" && Number.isFinite(n) && n >= 0 ? n : 0);

/** Map a finished `pi -p --mode json` to its typed result. Pure. */
export function piRunResultOf(spec: RunSpecView, exit: RunExit): RunResult {
  const events = jsonObjectLines<PiEvent>(exit.stdout);
  const session = events.find((e) => e.type === "session" && typeof e.id === "string")?.id;
  const answers = events.filter((e) => e.type === "message_end" && e.message?.role === "assistant").map((e) => e.message!);
  const finished = events.some((e) => e.type === "agent_end");
  const usage: RunUsage | undefined = answers.length
    ? {
        input_tokens: answers.reduce((a, m) => a + count(m.usage?.input), 0),
        output_tokens: answers.reduce((a, m) => a + count(m.usage?.output), 0),
        cache_read_input_tokens: answers.reduce((a, m) => a + count(m.usage?.cacheRead), 0),
        cache_creation_input_tokens: answers.reduce((a, m) => a + count(m.usage?.cacheWrite), 0),
      }
    : undefined;
  const base = runBase(spec, exit, {
    finished,
    costUsd: answers.reduce((a, m) => a + count(m.usage?.cost?.total), 0),
    costBasis: "client-estimate",
    usage,
    sessionId: session,
  });
  if (exit.timedOut) return failedRun(base, "timeout", "timeout", timeoutMessage(spec.timeoutMs));
  const last = answers.at(-1);
  if (last?.stopReason === "error" || last?.stopReason === "aborted")
    return failedRun(base, "error", "failed", `pi reported an error: ${last.errorMessage ?? last.stopReason}`);
  if (!finished) return unfinishedRun(base, exit, "pi", "without finishing its turn");
  const text = (last?.content ?? [])
    .filter((p) => p.type === "text" && typeof p.text === "string")
    .map((p) => p.text)
    .join("");
  if (!last || text === "") return failedRun(base, "error", "no-result", "The run ended without a final message.");
  return { ...base, status: "ok", output: text };
}

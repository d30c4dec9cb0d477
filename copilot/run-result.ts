// What `copilot -s --output-format json` prints (1.0.102: one session event a line, then a
// `result` line with the session id and exit code), mapped to the typed RunResult (docs/runs.md,
// docs/runtimes.md). Copilot prints no token counts or price for a run: its cost is 0 on the
// `usage` basis, the dollars being the provider's bill (or the user's Copilot plan).
import { failedRun, jsonObjectLines, runBase, timeoutMessage, unfinishedRun, type RunExit, type RunSpecView } from "../runtime/index.js";
import type { RunResult } from "../schemas/index.js";

interface CopilotEvent {
  type?: string;
  sessionId?: string;
  exitCode?: number;
  data?: { content?: string; message?: string; errorType?: string };
}

/** Map a finished `copilot --output-format json` run to its typed result. Pure. */
export function copilotRunResultOf(spec: RunSpecView, exit: RunExit): RunResult {
  const events = jsonObjectLines<CopilotEvent>(exit.stdout);
  const result = events.find((e) => e.type === "result");
  const base = runBase(spec, exit, { finished: result !== undefined, costUsd: 0, costBasis: "usage", sessionId: result?.sessionId });
  if (exit.timedOut) return failedRun(base, "timeout", "timeout", timeoutMessage(spec.timeoutMs));
  const error = events.find((e) => e.type === "session.error");
  if (error)
    return failedRun(base, "error", "failed", `GitHub Copilot CLI reported an error: ${error.data?.message ?? error.data?.errorType ?? "no reason given"}`);
  if (!result) return unfinishedRun(base, exit, "GitHub Copilot CLI", "without its result");
  if (typeof result.exitCode === "number" && result.exitCode !== 0)
    return failedRun(base, "error", "failed", `GitHub Copilot CLI ended its run with exit code ${result.exitCode}.`);
  const last = events.filter((e) => e.type === "assistant.message" && typeof e.data?.content === "string" && e.data.content !== "").at(-1)?.data?.content;
  if (last === undefined) return failedRun(base, "error", "no-result", "The run ended without a final message.");
  return { ...base, status: "ok", output: last };
}

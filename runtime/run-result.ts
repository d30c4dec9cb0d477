// What every runtime's run-result parser says the same way: what a result holds whatever became
// of the run, a run the kernel killed for its timeout, and one that ended before it finished.
import type { RunErrorKind, RunResult, RunUsage } from "../schemas/index.js";
import type { RunExit, RunSpecView } from "./adapter.js";

/** How much of a CLI's stderr an unfinished run's error quotes (its end, where the reason is). */
const STDERR_TAIL = 4_096;

/** The error of a run killed for passing its timeout (the kernel proved its process group gone first). */
export function timeoutMessage(timeoutMs: number): string {
  return `The run passed its timeout of ${Math.round(timeoutMs / 1000)} s and was killed with its whole process group (nothing of it runs any more).`;
}

/** A failed result on top of what the parser knows of the run. */
export function failedRun(base: Omit<RunResult, "status" | "error">, status: "error" | "timeout", kind: RunErrorKind, message: string): RunResult {
  return { ...base, status, error: { kind, message } };
}

/** What the parser read of the run's output. */
export interface RunReading {
  /** The CLI finished what it reports (a turn, a step, its result): its cost stands even if a signal came after. */
  finished: boolean;
  /** The run's cost as the CLI knows it, and how it is known. */
  costUsd: number;
  costBasis: "usage" | "client-estimate";
  usage?: RunUsage | undefined;
  sessionId?: string | undefined;
}

/**
 * The fields of a result whatever became of the run. A run killed (its timeout, or a signal before
 * it finished) counts as the median of recent runs (`median-estimate`): the CLI never said its cost.
 */
export function runBase(spec: RunSpecView, exit: RunExit, r: RunReading): Omit<RunResult, "status" | "error"> {
  const priced = !exit.timedOut && !(exit.signal && !r.finished);
  return {
    runId: spec.runId,
    ...(spec.persona ? { persona: spec.persona } : {}),
    ...(priced ? { costUsd: r.costUsd, costBasis: r.costBasis } : { costUsd: spec.fallbackCostUsd ?? 0, costBasis: "median-estimate" as const }),
    ...(r.usage ? { usage: r.usage } : {}),
    ...(r.sessionId ? { sessionId: r.sessionId } : {}),
    latencyMs: exit.latencyMs,
    ...(spec.model ? { model: spec.model } : {}),
    modelSource: spec.modelSource,
    permissionDenials: [],
  };
}

/**
 * A run whose CLI ended before it finished: killed by a signal, or exited without its result
 * (`<label> exited with code <n> <missing>: <stderr's tail>.`).
 */
export function unfinishedRun(base: Omit<RunResult, "status" | "error">, exit: RunExit, label: string, missing: string): RunResult {
  if (exit.signal) return failedRun(base, "error", "killed", `The run's process was killed by ${exit.signal} before it finished its turn.`);
  const t = exit.stderr.trim().slice(-STDERR_TAIL);
  return failedRun(base, "error", "no-result", `${label} exited with code ${exit.code ?? "unknown"} ${missing}${t ? `: ${t}` : ""}.`);
}

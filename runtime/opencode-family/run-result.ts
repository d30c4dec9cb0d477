// What `<cli> run --format json` prints in the OpenCode family (one JSON event a line: step_start,
// text, tool_use, step_finish, error; each with the sessionID), mapped to the typed RunResult
// (docs/runs.md, docs/runtimes.md). The CLI prices each step from its model catalog: the run's cost
// is that client estimate (0 for a model the catalog has no price for), its token usage summed
// over steps.
import type { RunErrorKind, RunResult, RunUsage } from "../../schemas/index.js";
import type { RunExit, RunSpecView } from "../adapter.js";
import { jsonObjectLines } from "../json-lines.js";
import { failedRun, runBase, timeoutMessage, unfinishedRun } from "../run-result.js";

interface RunEvent {
  type?: string;
  sessionID?: string;
  part?: {
    type?: string;
    text?: string;
    synthetic?: boolean;
    cost?: number;
    tokens?: { input?: number; output?: number; reasoning?: number; cache?: { read?: number; write?: number } };
  };
  error?: { name?: string; data?: { message?: string } };
}

const count = (n: unknown): number => (typeof n === "number" && Number.isFinite(n) && n >= 0 ? n : 0);

/** The steps' token counts, in the RunUsage names. */
function usageOf(steps: RunEvent[]): RunUsage {
  const t = steps.map((s) => s.part?.tokens ?? {});
  return {
    input_tokens: t.reduce((a, x) => a + count(x.input), 0),
    output_tokens: t.reduce((a, x) => a + count(x.output) + count(x.reasoning), 0),
    cache_read_input_tokens: t.reduce((a, x) => a + count(x.cache?.read), 0),
    cache_creation_input_tokens: t.reduce((a, x) => a + count(x.cache?.write), 0),
  };
}

/** Map a finished `<cli> run --format json` of the CLI named `label` to its typed result. Pure. */
export function runResultOf(label: string, spec: RunSpecView, exit: RunExit): RunResult {
  const events = jsonObjectLines<RunEvent>(exit.stdout);
  const session = events.find((e) => typeof e.sessionID === "string")?.sessionID;
  const steps = events.filter((e) => e.type === "step_finish");
  const texts = events.filter((e) => e.type === "text" && typeof e.part?.text === "string" && !e.part.synthetic);
  const cost = steps.reduce((a, s) => a + count(s.part?.cost), 0);
  const base = runBase(spec, exit, {
    finished: steps.length > 0,
    costUsd: cost,
    costBasis: "client-estimate",
    usage: steps.length ? usageOf(steps) : undefined,
    sessionId: session,
  });
  const failed = (status: "error" | "timeout", kind: RunErrorKind, message: string): RunResult => failedRun(base, status, kind, message);
  if (exit.timedOut) return failed("timeout", "timeout", timeoutMessage(spec.timeoutMs));
  const error = events.find((e) => e.type === "error");
  if (error) return failed("error", "failed", `${label} reported an error: ${error.error?.data?.message ?? error.error?.name ?? "no reason given"}`);
  if (!steps.length) return unfinishedRun(base, exit, label, "without finishing a step");
  const last = texts[texts.length - 1]?.part?.text;
  if (last === undefined) return failed("error", "no-result", "The run ended without a final message.");
  return { ...base, status: "ok", output: last };
}

// What `gemini --output-format json` prints (0.61.0: one JSON object, `{session_id, response,
// stats}`, or `{session_id, error: {type, message, code}}` when the turn failed), mapped to the
// typed RunResult (docs/runs.md, docs/runtimes.md). Gemini reports token usage per model, not
// dollars: a run's costBasis is `usage` and its costUsd 0, unless it was killed (then the median
// of recent runs, as for Claude and Codex).
import { failedRun, runBase, timeoutMessage, unfinishedRun, type RunExit, type RunSpecView } from "../runtime/index.js";
import type { RunErrorKind, RunResult, RunUsage } from "../schemas/index.js";

interface GeminiTokens {
  input?: number;
  prompt?: number;
  candidates?: number;
  cached?: number;
  thoughts?: number;
}

interface GeminiOutput {
  session_id?: string;
  response?: unknown;
  stats?: { models?: Record<string, { tokens?: GeminiTokens }> };
  error?: { type?: string; message?: string; code?: unknown };
}

/** The JSON object the CLI printed (the whole of stdout, or from its first line that opens an object). */
function outputOf(stdout: string): GeminiOutput | undefined {
  const lines = stdout.split("\n");
  const starts = [0, ...lines.map((l, i) => (l.trimStart().startsWith("{") ? i : -1)).filter((i) => i > 0)];
  for (const at of starts) {
    try {
      const o: unknown = JSON.parse(lines.slice(at).join("\n"));
      if (o && typeof o === "object" && !Array.isArray(o)) return o as GeminiOutput;
    } catch {
      // not from here
    }
  }
  return undefined;
}

const count = (n: unknown): number => (typeof n === "number" && Number.isFinite(n) && n >= 0 ? n : 0);

/** Every model's tokens summed (the router's and the main turn's), in the RunUsage names; cached input is a cache read. */
function usageOf(models: Record<string, { tokens?: GeminiTokens }>): RunUsage {
  const t = Object.values(models).map((m) => m.tokens ?? {});
  return {
    input_tokens: t.reduce((a, x) => a + count(x.input ?? x.prompt), 0),
    output_tokens: t.reduce((a, x) => a + count(x.candidates) + count(x.thoughts), 0),
    cache_read_input_tokens: t.reduce((a, x) => a + count(x.cached), 0),
  };
}

/** Map a finished `gemini --output-format json` to its typed result. Pure. */
export function geminiRunResultOf(spec: RunSpecView, exit: RunExit): RunResult {
  const out = outputOf(exit.stdout);
  const models = out?.stats?.models;
  const finished = out !== undefined && (typeof out.response === "string" || out.error !== undefined);
  const base = runBase(spec, exit, {
    finished,
    costUsd: 0,
    costBasis: "usage",
    usage: models && Object.keys(models).length ? usageOf(models) : undefined,
    sessionId: typeof out?.session_id === "string" ? out.session_id : undefined,
  });
  const failed = (status: "error" | "timeout", kind: RunErrorKind, message: string): RunResult => failedRun(base, status, kind, message);
  if (exit.timedOut) return failed("timeout", "timeout", timeoutMessage(spec.timeoutMs));
  if (out?.error) return failed("error", "failed", `Gemini CLI reported an error: ${out.error.message ?? out.error.type ?? "no reason given"}`);
  if (!out || typeof out.response !== "string") return unfinishedRun(base, exit, "Gemini CLI", "without a result");
  if (exit.code !== 0 && exit.code !== null) return failed("error", "failed", `Gemini CLI exited with code ${exit.code}.`);
  return { ...base, status: "ok", output: out.response };
}

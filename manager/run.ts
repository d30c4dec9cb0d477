// One headless Claude run (docs/runs.md): the launch builder's `run` profile, a hard timeout that
// ends the whole process group (and proves it gone), and the CLI's JSON result mapped to a typed
// RunResult in which a schema violation, a missing result, a kill and a timeout each differ.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { buildClaudeLaunch, launchClaude, normaliseOptionKey, type AgentFile } from "../claude/index.js";
import { COST_BASIS, type ModelSource, type RunErrorKind, type RunResult, type RunUsage } from "../schemas/index.js";
import type { Logger } from "../broker/index.js";
import type { ClaudeSeatOptions } from "./claude-seat.js";

/** One run to execute. */
export interface RunSpec {
  runId: string;
  space: string;
  persona?: string | undefined;
  agentFile?: AgentFile | undefined;
  prompt: string;
  /** A JSON Schema object: the output must match it. */
  jsonSchema?: Record<string, unknown> | undefined;
  timeoutMs: number;
  model?: string | undefined;
  modelSource: ModelSource;
  cwd: string;
  /** What the run counts as when the CLI reports no cost (killed): the median of recent runs. */
  fallbackCostUsd?: number | undefined;
  /** Passed as `--max-budget-usd` (the lower of this and the agent file's own). */
  maxBudgetUsd?: number | undefined;
  /** Where the run's private launch directory goes. */
  runtimeDir: string;
}

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

/** How the process ended, as the executor saw it. */
export interface RunExit {
  code: number | null;
  signal: string | null;
  /** We killed it for its timeout. */
  timedOut: boolean;
  stdout: string;
  stderr: string;
  latencyMs: number;
}

/** Grace between SIGTERM and SIGKILL for a run past its timeout. */
const KILL_GRACE_MS = 2_000;
const MAX_STDOUT = 8 * 1024 * 1024;
const STDERR_TAIL = 4_096;

/** Map a finished run's process exit and output to its typed result. Pure. */
export function runResultOf(
  spec: Pick<RunSpec, "runId" | "persona" | "jsonSchema" | "model" | "modelSource" | "timeoutMs" | "fallbackCostUsd">,
  exit: RunExit,
): RunResult {
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
  const failed = (status: "error" | "timeout", kind: RunErrorKind, message: string): RunResult => ({ ...base, status, error: { kind, message } });
  if (exit.timedOut)
    return failed(
      "timeout",
      "timeout",
      `The run passed its timeout of ${Math.round(spec.timeoutMs / 1000)} s and was killed with its whole process group (nothing of it runs any more).`,
    );
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

/** Whether any process of group `pgid` still runs. */
export function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

function killGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    /* the group is empty */
  }
}

/**
 * Start Claude headless for `spec` (own process group, prompt on stdin, `dontAsk` with the agent
 * file's allow-list and the deny floor), wait for it within the timeout, and map its output.
 * A run past its timeout gets SIGTERM, then SIGKILL, on its whole group; the result is returned
 * only once no process of that group is left.
 */
export async function executeRun(o: ClaudeSeatOptions, spec: RunSpec, log: Logger): Promise<RunResult> {
  const started = Date.now();
  mkdirSync(spec.runtimeDir, { recursive: true, mode: 0o700 });
  const schemaDir = spec.jsonSchema ? mkdtempSync(join(spec.runtimeDir, "schema-")) : undefined;
  try {
    const fm = spec.agentFile?.frontmatter;
    const launchOptions: Record<string, string | number | boolean> = {};
    let fileCap: number | undefined;
    for (const [k, v] of Object.entries(fm?.launchOptions ?? {})) {
      if (normaliseOptionKey(k) === "max-budget-usd" && typeof v === "number") fileCap = v;
      else launchOptions[k] = v;
    }
    const cap = [fileCap, spec.maxBudgetUsd].filter((v): v is number => v !== undefined);
    if (cap.length) launchOptions["max-budget-usd"] = Math.min(...cap);
    let jsonSchemaFile: string | undefined;
    if (schemaDir) {
      jsonSchemaFile = join(schemaDir, "schema.json");
      writeFileSync(jsonSchemaFile, JSON.stringify(spec.jsonSchema), { mode: 0o600 });
    }
    const launch = buildClaudeLaunch({
      profile: "run",
      noMesh: true,
      prompt: spec.prompt,
      cwd: spec.cwd,
      identity: { name: `run_${spec.runId}`, space: spec.space, launchMaterialPath: "/dev/null" },
      connectorEntry: o.connectorEntry,
      parentEnv: o.parentEnv,
      authMode: o.authMode ?? (o.parentEnv.ANTHROPIC_API_KEY ? "api_key" : "subscription"),
      claudePath: o.claudePath,
      runtimeDir: spec.runtimeDir,
      ...(jsonSchemaFile ? { jsonSchemaFile } : {}),
      ...(spec.model ? { model: spec.model } : {}),
      ...(spec.agentFile?.persona ? { persona: spec.agentFile.persona } : {}),
      ...(fm?.agent ? { agent: fm.agent } : {}),
      launchOptions,
      allowedTools: fm?.allowedTools ?? [],
    });
    const exit = await waitForRun(launch, spec.timeoutMs, started, log.child({ run: spec.runId }));
    return runResultOf(spec, exit);
  } catch (err) {
    return {
      runId: spec.runId,
      ...(spec.persona ? { persona: spec.persona } : {}),
      status: "error",
      costUsd: 0,
      costBasis: COST_BASIS,
      latencyMs: Date.now() - started,
      ...(spec.model ? { model: spec.model } : {}),
      modelSource: spec.modelSource,
      permissionDenials: [],
      error: { kind: "failed", message: `The run could not be started: ${(err as Error).message}` },
    };
  } finally {
    if (schemaDir) rmSync(schemaDir, { recursive: true, force: true });
  }
}

async function waitForRun(launch: ReturnType<typeof buildClaudeLaunch>, timeoutMs: number, started: number, log: Logger): Promise<RunExit> {
  const { child } = launchClaude(launch, { stdio: "pipe", detached: true });
  let stdout = "";
  let stderr = "";
  child.stdout?.setEncoding("utf8").on("data", (s: string) => {
    if (stdout.length < MAX_STDOUT) stdout += s;
  });
  child.stderr?.setEncoding("utf8").on("data", (s: string) => {
    stderr = (stderr + s).slice(-STDERR_TAIL);
  });
  const pgid = child.pid;
  let timedOut = false;
  let killTimer: NodeJS.Timeout | undefined;
  const timer = setTimeout(() => {
    if (pgid === undefined) return;
    timedOut = true;
    log.warn({ pid: pgid, timeoutMs }, "run passed its timeout: ending its process group");
    killGroup(pgid, "SIGTERM");
    killTimer = setTimeout(() => killGroup(pgid, "SIGKILL"), KILL_GRACE_MS);
  }, timeoutMs);
  const { code, signal } = await new Promise<{ code: number | null; signal: string | null }>((resolve) => {
    child.once("error", (err) => {
      stderr += String(err);
      resolve({ code: null, signal: null });
    });
    child.once("close", (c, s) => resolve({ code: c, signal: s }));
  });
  clearTimeout(timer);
  if (killTimer) clearTimeout(killTimer);
  if (pgid !== undefined) await endGroup(pgid, log);
  return { code, signal, timedOut, stdout, stderr, latencyMs: Date.now() - started };
}

/** Claude is gone; make sure nothing it started (MCP servers, hooks, tools) outlives it: SIGKILL the group until it is empty. */
async function endGroup(pgid: number, log: Logger): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (groupAlive(pgid)) {
    killGroup(pgid, "SIGKILL");
    if (Date.now() > deadline) {
      log.error({ pgid }, "a run's process group survived SIGKILL for 10 s");
      return;
    }
    await sleep(50);
  }
}

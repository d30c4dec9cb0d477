// One headless run (docs/runs.md), for any runtime: its adapter builds the launch and reads the
// output into a typed RunResult (a schema violation, a missing result, a kill and a timeout each
// differ); this executor owns the hard timeout that ends the whole process group (and proves it gone).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { type AgentFile, runRefusal, type RunExit, type RuntimeAdapter, type RuntimeHost, type RuntimeLaunch } from "../runtime/index.js";
import { COST_BASIS, CotalError, type ModelSource, type RunResult } from "../schemas/index.js";
import type { Logger } from "../broker/index.js";

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

/** Grace between SIGTERM and SIGKILL for a run past its timeout. */
const KILL_GRACE_MS = 2_000;
const MAX_STDOUT = 8 * 1024 * 1024;
const STDERR_TAIL = 4_096;

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
 * Start the runtime headless for `spec` (own process group, prompt on stdin, its unattended
 * posture with the agent file's allow-list and the deny floor), wait for it within the timeout,
 * and have its adapter map the output.
 * A run past its timeout gets SIGTERM, then SIGKILL, on its whole group; the result is returned
 * only once no process of that group is left.
 */
export async function executeRun(adapter: RuntimeAdapter, host: RuntimeHost, spec: RunSpec, log: Logger): Promise<RunResult> {
  const started = Date.now();
  mkdirSync(spec.runtimeDir, { recursive: true, mode: 0o700 });
  const schemaDir = spec.jsonSchema ? mkdtempSync(join(spec.runtimeDir, "schema-")) : undefined;
  try {
    const fm = spec.agentFile?.frontmatter;
    let jsonSchemaFile: string | undefined;
    if (schemaDir) {
      jsonSchemaFile = join(schemaDir, "schema.json");
      writeFileSync(jsonSchemaFile, JSON.stringify(spec.jsonSchema), { mode: 0o600 });
    }
    // What every runtime refuses alike, from its capability flags, before its adapter builds anything.
    const refused = runRefusal(adapter, { prompt: spec.prompt, jsonSchemaFile });
    if (refused) throw new CotalError("run-refused", refused.message, { remedy: refused.remedy });
    const launch = await adapter.buildRun(host, {
      runId: spec.runId,
      space: spec.space,
      prompt: spec.prompt,
      cwd: spec.cwd,
      persona: spec.agentFile?.persona,
      model: spec.model,
      agent: fm?.agent,
      launchOptions: fm?.launchOptions ?? {},
      allowedTools: fm?.allowedTools ?? [],
      jsonSchemaFile,
      maxBudgetUsd: spec.maxBudgetUsd,
      runtimeDir: spec.runtimeDir,
    });
    const exit = await waitForRun(adapter, launch, spec.timeoutMs, started, log.child({ run: spec.runId }));
    return adapter.parseRun(spec, exit);
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

async function waitForRun(adapter: RuntimeAdapter, launch: RuntimeLaunch, timeoutMs: number, started: number, log: Logger): Promise<RunExit> {
  const { child } = adapter.spawn(launch, { stdio: "pipe", detached: true });
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

/** The CLI is gone; make sure nothing it started (MCP servers, hooks, tools) outlives it: SIGKILL the group until it is empty. */
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

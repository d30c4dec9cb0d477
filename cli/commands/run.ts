import { readFileSync } from "node:fs";
import { hostname } from "node:os";
import { resolve } from "node:path";
import type { Command } from "commander";
import { z } from "zod";
import { credsCaller } from "../../broker/index.js";
import { isOperator } from "../../manager/index.js";
import { describeCost, ManagerInstance, PrincipalToken, TaskMarker, type RunReply, type RunResult } from "../../schemas/index.js";
import { jsonOption, meshOptions, resolveTarget } from "../mesh-client/mesh-target.js";
import { EXIT, UsageError } from "../terminal/errors.js";
import { callManager, listManagers } from "../mesh-client/manager-calls.js";
import { printJson, printLines, safeLines } from "../terminal/output.js";
import { withSession } from "../mesh-client/session.js";
import { duration, parseInput } from "../terminal/validate.js";

const count = z.coerce.number().int().min(1).max(32);

const RunFlags = z.object({
  personas: z.array(PrincipalToken).min(1).max(32),
  prompt: z.string().min(1).max(100_000),
  jsonSchema: z.string().min(1).optional(),
  timeout: duration.pipe(z.number().int().min(1_000).max(3_600_000)).default(300_000),
  model: z.string().min(1).max(200).optional(),
  on: ManagerInstance.optional(),
  task: TaskMarker.optional(),
  parallel: count.default(1),
  maxParallel: count.default(4),
  cwd: z.string().min(1).optional(),
  json: z.boolean().optional(),
});

/** The JSON Schema object a --json-schema file holds (read here: the manager may run on another host). */
function readSchema(file: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, "utf8"));
  } catch (cause) {
    throw new UsageError(
      `Cannot read the JSON schema ${file}: ${cause instanceof SyntaxError ? "it is not valid JSON" : ((cause as NodeJS.ErrnoException).code ?? String(cause))}.`,
      { remedy: "Give a file holding one JSON Schema object." },
    );
  }
  if (!parsed || typeof parsed !== "object" || Array.isArray(parsed))
    throw new UsageError(`The JSON schema ${file} is not a JSON object.`, { remedy: "Give a file holding one JSON Schema object." });
  return parsed as Record<string, unknown>;
}

/** A line (and the output) of one run's result, for people. */
export function describeRun(r: RunResult): string[] {
  const cost = describeCost(r);
  const model = `model ${r.model ?? "Claude's default"} (${r.modelSource})`;
  const head = `${r.persona ?? "run"} ${r.runId}: ${r.status}${r.status === "skipped" ? "" : `, ${cost}, ${r.latencyMs} ms, ${model}`}${r.sessionId ? `, session ${r.sessionId}` : ""}`;
  const lines = [head];
  if (r.error) lines.push(`  ${r.error.kind}: ${r.error.message}`);
  if (r.permissionDenials.length) lines.push(`  denied tools: ${r.permissionDenials.join(", ")}`);
  if (r.output !== undefined)
    lines.push(
      ...safeLines(typeof r.output === "string" ? r.output : JSON.stringify(r.output, null, 2))
        .split("\n")
        .map((l) => `  ${l}`),
    );
  return lines;
}

/** `cotal run`: one-shot headless Claude runs on a manager, under the budget gates. */
export function registerRun(program: Command): void {
  const cmd = program
    .command("run")
    .summary("run Claude headless once per persona (or N times) and print each typed result; budget gates first")
    .description(
      "Ask a manager (one on this host when there is one, else any, or the one named by --on) to run Claude headless " +
        "(-p --output-format json) for each persona's agent file, --parallel times each, at most --max-parallel at once. " +
        "Before anything starts, the budget gates compare what was spent today (COTAL_DAILY_BUDGET_USD on the manager) and " +
        "under --task (COTAL_TASK_BUDGET_USD) plus the estimate (median recent run cost × runs) with the caps; a refusal " +
        "names the cap, the spend and the estimate, and nothing runs. Each result: ok, timeout, error or skipped, the output " +
        "(parsed JSON with --json-schema), the cost the Claude CLI estimated, usage, session id, latency. Exit 0 when every run is ok, else 1.",
    )
    .argument("<persona...>", "agent files .cotal/agents/<persona>.md under --cwd on the manager's host")
    .requiredOption("--prompt <text>", "the prompt (given to Claude on stdin)")
    .option("--json-schema <file>", "a JSON Schema file: the output must match it and comes back parsed")
    .option("--timeout <duration>", "kill a run (its whole process group) after this long", "300s")
    .option("--model <model>", "the model (default: the agent file's, else Claude's)")
    .option("--on <instance>", "the manager instance to run on (see `cotal ps`)")
    .option("--task <marker>", "a task marker: runs sharing it share the per-task cap")
    .option("--parallel <n>", "runs of each persona", "1")
    .option("--max-parallel <n>", "runs at once, at most", "4")
    .option("--cwd <dir>", "where the runs work, on the manager's host (default: this folder when the manager runs here)");
  jsonOption(meshOptions(cmd)).action(async (personas: string[], raw: Record<string, unknown>) => {
    const f = parseInput(RunFlags, { ...raw, personas }, { jsonSchema: "--json-schema", maxParallel: "--max-parallel" });
    const jsonSchema = f.jsonSchema ? readSchema(f.jsonSchema) : undefined;
    const target = resolveTarget(raw);
    const jobs = f.personas.length * f.parallel;
    const caller = credsCaller(target.creds);
    const reply: RunReply = await withSession(target, async (s) => {
      const here = (await listManagers(s)).find((m) => m.host === hostname())?.instance;
      const on = f.on ?? here ?? "one";
      // Only the operator chooses where a run works; anyone else's runs work in the manager's folder.
      const cwd = f.cwd ? resolve(f.cwd) : on === here && isOperator(caller) ? process.cwd() : undefined;
      const rounds = Math.ceil(jobs / Math.min(f.maxParallel, jobs));
      return callManager(
        s.nc,
        target.space,
        "run",
        caller,
        {
          personas: f.personas,
          prompt: f.prompt,
          timeoutMs: f.timeout,
          parallel: f.parallel,
          maxParallel: f.maxParallel,
          ...(jsonSchema ? { jsonSchema } : {}),
          ...(f.model ? { model: f.model } : {}),
          ...(f.task ? { task: f.task } : {}),
          ...(cwd ? { cwd } : {}),
        },
        { target: on, timeoutMs: rounds * (f.timeout + 15_000) + 15_000 },
      );
    });
    if (f.json) printJson(reply);
    else {
      if (reply.refused) printLines(safeLines(reply.refused.message));
      else printLines(...reply.results.flatMap(describeRun));
    }
    if (reply.refused || reply.results.some((r) => r.status !== "ok")) process.exitCode = EXIT.failed;
  });
}

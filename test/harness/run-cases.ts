// Cases every runtime's `cotal run` e2e file checks the same way, each against its own real CLI
// and model double: the persona `coder` of the runtime, a run that ends ok with the model's output,
// a JSON schema refused by the kernel before anything reaches the model, the deny floor's refusal
// coming back to the model as the shell tool's error, and `cotal status` naming the runtime's
// configuration while its key is nowhere to be read. A file says only what its runtime does
// differently: its cost basis, its session ids, where the persona reaches the model.
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "vitest";
import type { RunReply, RunResult } from "../../schemas/index.js";
import { toolResults, type RecordedRequest, type ScriptStep } from "../../testbed/model-double.js";
import type { CliResult } from "./cli.js";
import type { AgentFile } from "./user-path.js";

/** What the persona tells the model; a run file finds it where its runtime puts it. */
export const CODER_PERSONA = "CODER-PERSONA";

/** The agent file of persona `coder` on `runtime` (with `allowedTools`, if any), for the mesh's `agents`. */
export function coderAgent(runtime: string, allowedTools?: readonly string[]): Record<string, AgentFile> {
  const fields = { name: "coder", runtime, ...(allowedTools ? { allowedTools } : {}) };
  return { coder: { fields, body: `You are ${CODER_PERSONA}, terse.` } };
}

/** The start of the prompt of the deny floor's case (`expectFloorRefusedToModel`). */
const FLOOR = "RUN-FLOOR";

/**
 * A Messages double's script for `expectRunOk` and `expectFloorRefusedToModel`: the turn `shown`
 * `marker` answers `output`; the turn shown the floor's prompt calls `bash` with `floorInput` (a
 * command the deny floor covers), and after the refusal answers `refused`. `shown` is where the
 * runtime puts the prompt in its request.
 */
export function runSteps(o: {
  shown: (r: RecordedRequest, marker: string) => boolean;
  marker: string;
  output: string;
  floorInput: Record<string, unknown>;
  refused: string;
}): ScriptStep[] {
  return [
    { when: (r) => o.shown(r, o.marker), reply: [o.output] },
    { when: (r) => o.shown(r, FLOOR), reply: [{ tool: "bash", input: o.floorInput }] },
    { afterToolResult: "bash", reply: [o.refused] },
  ];
}

/** A file's `cotal` runner and the model requests that carry a marker (its double's own kind). */
export interface RunCaseParts<R = unknown> {
  project: string;
  cotal: (args: string[]) => Promise<CliResult>;
  requests: (marker: string) => readonly R[];
}

/**
 * `cotal run coder --prompt <prompt> --json`: exit 0 and a result that is ok, of persona coder,
 * costing 0 on `costBasis`, with the model's `output` and a session id like `sessionId`. Returns it.
 */
export async function expectRunOk(
  cotal: RunCaseParts["cotal"],
  prompt: string,
  o: { output: string; costBasis: RunResult["costBasis"]; sessionId: RegExp },
): Promise<RunResult> {
  const r = await cotal(["run", "coder", "--prompt", prompt, "--json"]);
  const result = r.json<RunReply>().results[0];
  expect(result, `${r.stdout}\n${r.stderr}`).toMatchObject({ status: "ok", output: o.output, persona: "coder", costUsd: 0, costBasis: o.costBasis });
  expect(r.code).toBe(0);
  expect(result!.sessionId).toMatch(o.sessionId);
  return result!;
}

/** `--json-schema` on a runtime that cannot hold to one: an error naming why, and no request sent. */
export async function expectSchemaRefusedUnsent(p: RunCaseParts): Promise<void> {
  const schema = join(p.project, "schema.json");
  writeFileSync(schema, JSON.stringify({ type: "object", properties: { a: { type: "string" } } }));
  const r = await p.cotal(["run", "coder", "--prompt", "RUN-SCHEMA", "--json-schema", schema, "--json"]);
  expect(r.json<RunReply>().results[0], `${r.stdout}\n${r.stderr}`).toMatchObject({
    status: "error",
    error: { message: expect.stringContaining("cannot be held to a JSON schema") },
  });
  expect(p.requests("RUN-SCHEMA")).toEqual([]);
}

/**
 * The model's floor-listed command (its script answers `output` after the refusal): the run ends ok
 * and the shell tool's result the model got is the floor's refusal, containing `says` (and marked an
 * error, where the CLI marks it so).
 */
export async function expectFloorRefusedToModel(
  p: RunCaseParts<RecordedRequest>,
  prompt: string,
  output: string,
  says: string,
  markedError = true,
): Promise<void> {
  const r = await p.cotal(["run", "coder", "--prompt", `${FLOOR} ${prompt}`, "--json"]);
  expect(r.json<RunReply>().results[0], `${r.stdout}\n${r.stderr}`).toMatchObject({ status: "ok", output });
  const refused = toolResults(p.requests(FLOOR).at(-1)!).find((t) => t.name === "bash")!;
  if (markedError) expect(refused.isError).toBe(true);
  expect(refused.text).toContain(says);
}

/**
 * `cotal status` names `runtime`'s configuration (`said`, on its `<runtime> config:` line) and never
 * `key`; neither the host's manager's argv nor any of the mesh's logs holds the key.
 */
export async function expectStatusNamesConfigNotKey(p: Pick<RunCaseParts, "project" | "cotal">, runtime: string, said: string, key: string): Promise<void> {
  const status = await p.cotal(["status"]);
  expect(status.code, status.stderr).toBe(0);
  const line = status.stdout.split("\n").find((l) => l.startsWith(`${runtime} config:`));
  expect(line, status.stdout).toContain(said);
  expect(status.stdout).not.toContain(key);
  expectKeyNotInManagerArgv(p.project, key);
  for (const log of readdirSync(join(p.project, ".cotal", "logs")))
    expect(readFileSync(join(p.project, ".cotal", "logs", log), "utf8"), log).not.toContain(key);
}

/** The argv of the project's host manager (the process `cotal up -d` left running) does not hold `key`. */
export function expectKeyNotInManagerArgv(project: string, key: string): void {
  const pid = (JSON.parse(readFileSync(join(project, ".cotal", "run", "manager.json"), "utf8")) as { pid: number }).pid;
  expect(readFileSync(`/proc/${pid}/cmdline`, "utf8")).not.toContain(key);
}

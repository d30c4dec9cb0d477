// Cases every runtime's `cotal run` e2e file checks the same way, each against its own real CLI
// and model double: a JSON schema is refused by the kernel before anything reaches the model, the
// deny floor's refusal comes back to the model as the shell tool's error, and `cotal status` names
// the runtime's configuration while its key is nowhere to be read.
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "vitest";
import type { RunReply } from "../../schemas/index.js";
import { toolResults, type RecordedRequest } from "../../testbed/model-double.js";
import type { CliResult } from "./cli.js";

/** A file's `cotal` runner and the model requests that carry a marker (its double's own kind). */
export interface RunCaseParts<R = unknown> {
  project: string;
  cotal: (args: string[]) => Promise<CliResult>;
  requests: (marker: string) => readonly R[];
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
  const r = await p.cotal(["run", "coder", "--prompt", `RUN-FLOOR ${prompt}`, "--json"]);
  expect(r.json<RunReply>().results[0], `${r.stdout}\n${r.stderr}`).toMatchObject({ status: "ok", output });
  const refused = toolResults(p.requests("RUN-FLOOR").at(-1)!).find((t) => t.name === "bash")!;
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
  const pid = (JSON.parse(readFileSync(join(p.project, ".cotal", "run", "manager.json"), "utf8")) as { pid: number }).pid;
  expect(readFileSync(`/proc/${pid}/cmdline`, "utf8")).not.toContain(key);
  for (const log of readdirSync(join(p.project, ".cotal", "logs")))
    expect(readFileSync(join(p.project, ".cotal", "logs", log), "utf8"), log).not.toContain(key);
}

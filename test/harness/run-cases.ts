// Cases every runtime's `cotal run` e2e file checks the same way, each against its own real CLI
// and model double: a JSON schema is refused by the kernel before anything reaches the model, and
// the deny floor's refusal comes back to the model as the shell tool's error.
import { writeFileSync } from "node:fs";
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

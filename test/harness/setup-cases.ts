// A case every `cotal setup --runtime <name>` e2e file checks the same way: once set up, running it
// again changes nothing and `--check` passes.
import { readFileSync } from "node:fs";
import { expect } from "vitest";
import type { CliResult } from "./cli.js";

/** `setup` (`cotal setup --runtime <name>` with the given flags) again: `ok`, `file` byte for byte as it was, and `--check` exits 0. */
export async function expectSetupRerunChangesNothing(setup: (args: string[]) => Promise<CliResult>, file: string): Promise<void> {
  const before = readFileSync(file, "utf8");
  const again = await setup(["--json"]);
  expect(again.code, again.stdout + again.stderr).toBe(0);
  expect(again.json()).toMatchObject({ files: [{ action: "ok" }] });
  expect(readFileSync(file, "utf8")).toBe(before);
  const check = await setup(["--check"]);
  expect(check.code, check.stdout + check.stderr).toBe(0);
}

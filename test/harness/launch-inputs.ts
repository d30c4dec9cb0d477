// What a runtime adapter's unit test hands its launch builders: a folder of the file's own for the
// launches (the user's HOME and the private homes go under it), a run's input and seat bob's, each
// asking nothing beyond the defaults; a case overrides what it pins.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll } from "vitest";
import type { RunLaunchInput, SeatLaunchInput } from "../../runtime/index.js";

/** A fresh `cotal-<runtime>-unit-…` folder, removed after the calling file's tests (registers `afterAll`). */
export function unitFolder(runtime: string): string {
  const dir = mkdtempSync(join(tmpdir(), `cotal-${runtime}-unit-`));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A run in `dir` (its cwd and runtime folder): prompt PROMPT-TEXT, persona PERSONA-TEXT, no options, no allow-list. */
export function runLaunchInput(dir: string, over: Partial<RunLaunchInput> = {}): RunLaunchInput {
  return {
    runId: "r1",
    space: "team",
    prompt: "PROMPT-TEXT",
    cwd: dir,
    persona: "PERSONA-TEXT",
    launchOptions: {},
    allowedTools: [],
    runtimeDir: dir,
    ...over,
  };
}

/** Seat bob of space team in `dir` (its cwd and seat folder), its launch material at `launchMaterialPath`: no options, no allow-list. */
export function seatLaunchInput(dir: string, launchMaterialPath: string, over: Partial<SeatLaunchInput> = {}): SeatLaunchInput {
  return { name: "bob", space: "team", cwd: dir, seatDir: dir, launchMaterialPath, launchOptions: {}, allowedTools: [], ...over };
}

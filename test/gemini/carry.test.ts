// Carry with a Gemini CLI seat: Gemini cannot resume a carried Claude session, so
// `cotal spawn --agent gemini --resume …` is refused before anything connects, is uploaded or
// starts, naming why (the capability table's carry row), as for Codex and OpenCode.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { geminiRuntime } from "../../gemini/index.js";
import { buildCli, cleanEnv, runCotal } from "../harness/cli.js";

const dir = mkdtempSync(join(tmpdir(), "cotal-gemini-carry-"));
beforeAll(async () => {
  await buildCli();
}, 180_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("carry to a Gemini CLI seat", () => {
  it("is refused before anything is sent, naming why", async () => {
    expect(geminiRuntime.capabilities.carry).toBe(false);
    // No mesh here: a refusal that tried to connect or upload would fail differently.
    const r = await runCotal(["spawn", "-d", "--agent", "gemini", "--name", "bob", "--resume", "123e4567-e89b-12d3-a456-426614174000"], {
      cwd: dir,
      env: cleanEnv({ HOME: dir }),
    });
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain("a gemini seat cannot resume one (docs/runtimes.md); nothing was uploaded or started");
  }, 60_000);
});

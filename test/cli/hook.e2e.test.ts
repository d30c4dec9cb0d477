// `cotal hook <event>` from the built bundle: with no connector to relay to, or on garbage
// input, it prints an empty reply and exits 0 — a hook never blocks a Claude session.
import { spawnSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { buildCli, cleanEnv, cotalBundle } from "../harness/cli.js";

beforeAll(async () => {
  await buildCli();
});

function hook(event: string, stdin: string) {
  const controlDir = mkdtempSync(join(tmpdir(), "cotal-hookdir-"));
  return spawnSync(process.execPath, [cotalBundle, "hook", event], {
    input: stdin,
    encoding: "utf8",
    timeout: 20_000,
    env: cleanEnv({ COTAL_SERVER: "nats://127.0.0.1:1", COTAL_SPACE: "s", COTAL_NAME: "nobody", COTAL_CONTROL_DIR: controlDir, COTAL_HOOK_DEBUG: "1" }),
  });
}

describe("cotal hook", () => {
  it("answers {} and exits 0 when no connector is running", () => {
    const r = hook("PreToolUse", JSON.stringify({ hook_event_name: "PreToolUse", session_id: "s1", tool_name: "Bash" }));
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({});
    expect(r.stderr).toMatch(/cotal hook: /);
  });

  it("answers {} and exits 0 on a payload that is not JSON", () => {
    const r = hook("UserPromptSubmit", "not json at all");
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({});
    expect(r.stderr).toMatch(/not a JSON object/);
  });
});

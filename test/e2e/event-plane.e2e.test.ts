// The event plane with the real Claude Code CLI, offline against the model double: a scripted
// turn (prompt, text, one Bash call) reaches events.local.bob as AG-UI frames in order, and no
// frame carries the tool's argument or its result.
import { mkdirSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { renderHooksSettings, streamViolation } from "../../connector/internal.js";
import { frameOf } from "../../schemas/index.js";
import { CONNECTOR_BUNDLE, ensureBuilt, HOOK_BUNDLE } from "../connector/built.js";
import { cleanupRun, nodeCommand, runClaude, writeMcpConfig, writeSettingsFile } from "../harness/claude-runner.js";
import { NatsServer, until } from "../harness/fixtures.js";
import { TestMesh } from "../harness/mesh.js";
import { ModelDouble } from "../../testbed/model-double.js";
import { ONE_TOOL_TURN } from "../harness/agui-shapes.js";

let server: NatsServer;
let mesh: TestMesh;
let root: string;

beforeAll(async () => {
  ensureBuilt();
  root = await mkdtemp(path.join(os.tmpdir(), "cotal-e2e-evt-"));
  server = await NatsServer.start();
  mesh = await TestMesh.start(server, "evt");
}, 60_000);
afterAll(async () => {
  await mesh?.close();
  await server?.cleanup();
  if (root) await rm(root, { recursive: true, force: true });
});

const ARG = "zebra-4711";

/**
 * One `claude -p` session of `name` with the cotal hooks and connector, against `double`. The
 * COTAL_* settings go in the shell's environment (hooks and connector see them), or only in the
 * MCP config's `env` (the hooks see none and find the connector through its pairing file).
 */
async function session(name: string, double: ModelDouble, prompt: string, env: Record<string, string> = {}, where: "shell" | "mcp-config" = "shell") {
  const dir = path.join(root, name);
  const ctl = path.join(dir, "ctl");
  mkdirSync(ctl, { recursive: true, mode: 0o700 });
  const cotalEnv = {
    COTAL_SERVER: server.url,
    COTAL_SPACE: mesh.space,
    COTAL_NAME: name,
    // With the settings only in the MCP config, the hooks and the connector share the default
    // control directory, under XDG_RUNTIME_DIR, which the shell sets to this session's own folder.
    ...(where === "shell" ? { COTAL_CONTROL_DIR: ctl } : {}),
    COTAL_LOG_FILE: path.join(dir, "connector.log"),
    COTAL_LOG_LEVEL: "debug",
    ...env,
  };
  const settings = await writeSettingsFile(dir, { hooks: renderHooksSettings({ command: (e) => nodeCommand(HOOK_BUNDLE, e) }) });
  const mcp = await writeMcpConfig(dir, {
    cotal: { type: "stdio", command: process.execPath, args: [CONNECTOR_BUNDLE], ...(where === "mcp-config" ? { env: cotalEnv } : {}) },
  });
  return runClaude({
    baseUrl: double.url,
    prompt,
    args: ["--mcp-config", mcp, "--strict-mcp-config", "--settings", settings, "--permission-mode", "dontAsk", "--allowedTools", "Bash", "mcp__cotal__*"],
    env: where === "shell" ? cotalEnv : { XDG_RUNTIME_DIR: ctl },
    timeoutMs: 60_000,
  });
}

/** The frames stored on `name`'s plane. */
async function planeOf(name: string) {
  const reader = await mesh.endpoint(`reader_${name}`);
  return (await reader.history(`events.local.${name}`)).map((h) => ({ raw: JSON.stringify(h.message), frame: frameOf(h.message.parts)! }));
}

describe("the event plane with the real claude CLI", () => {
  it("a scripted turn publishes run, text, tool-start and tool-end frames in order on events.local.bob, and no frame holds the tool's argument or result", async () => {
    const double = await ModelDouble.start([
      { reply: ["Let me look.", { tool: "Bash", input: { command: `echo ${ARG}`, description: "echo" } }] },
      { reply: ["Done."], afterToolResult: "Bash" },
    ]);
    const run = await session("bob", double, "Say hi");
    try {
      expect(run.code, run.stderr).toBe(0);
      const stored = () => planeOf("bob");
      // The connector flushes its WAL before it leaves (the session ended with the run).
      await until(async () => (await stored()).some((s) => s.frame.events.some((e) => e.type === "RUN_FINISHED")), 10_000, "RUN_FINISHED on events.local.bob");
      const frames = await stored();
      expect(frames.map((s) => s.frame.seq)).toEqual(frames.map((_, i) => i + 1));
      expect(frames.every((s) => s.frame.threadId === run.json?.session_id)).toBe(true);
      const events = frames.flatMap((s) => s.frame.events.map((e) => ({ ...e, runId: e.runId ?? s.frame.runId })));
      expect(events.map((e) => e.type)).toEqual([...ONE_TOOL_TURN]);
      expect(events.filter((e) => e.type === "TEXT_MESSAGE_CONTENT").map((e) => e.delta)).toEqual(["Say hi", "Let me look.", "Done."]);
      expect(events.find((e) => e.type === "TOOL_CALL_START")?.toolCallName).toBe("Bash");
      expect(streamViolation(events)).toBeUndefined();
      for (const s of frames) expect(s.raw).not.toContain(ARG);
    } finally {
      await double.close();
      await cleanupRun(run);
    }
  }, 90_000);

  it("a turn that ends on an API error closes its run with RUN_ERROR and the fixed message 'run failed'", async () => {
    const double = await ModelDouble.start([
      {
        reply: () => {
          throw new Error("upstream exploded: req_secret_42");
        },
      },
    ]);
    const run = await session("carol", double, "Say hi", { CLAUDE_CODE_MAX_RETRIES: "0", ANTHROPIC_MAX_RETRIES: "0" });
    try {
      await until(
        async () => (await planeOf("carol")).some((s) => s.frame.events.some((e) => e.type === "RUN_ERROR")),
        20_000,
        `RUN_ERROR on events.local.carol (claude exited ${run.code}: ${run.stdout.slice(0, 300)})`,
      );
      const frames = await planeOf("carol");
      const events = frames.flatMap((s) => s.frame.events);
      expect(events.filter((e) => e.type === "RUN_ERROR").map((e) => e.message)).toEqual(["run failed"]);
      expect(events.some((e) => e.type === "RUN_FINISHED")).toBe(false);
      expect(streamViolation(frames.flatMap((s) => s.frame.events.map((e) => ({ ...e, runId: e.runId ?? s.frame.runId }))))).toBeUndefined();
      for (const s of frames) expect(s.raw).not.toContain("req_secret_42");
    } finally {
      await double.close();
      await cleanupRun(run);
    }
  }, 120_000);

  it("a session whose COTAL_* settings are only in its MCP config (its hooks have none) publishes its frames, first prompt included", async () => {
    const double = await ModelDouble.start([{ reply: ["Hi from dan."] }]);
    const run = await session("dan", double, "FIRST-PROMPT hello", {}, "mcp-config");
    try {
      expect(run.code, run.stderr).toBe(0);
      const events = async () => (await planeOf("dan")).flatMap((s) => s.frame.events);
      await until(async () => (await events()).some((e) => e.type === "RUN_FINISHED"), 15_000, "RUN_FINISHED on events.local.dan");
      expect((await events()).filter((e) => e.type === "TEXT_MESSAGE_CONTENT").map((e) => e.delta)).toEqual(["FIRST-PROMPT hello", "Hi from dan."]);
    } finally {
      await double.close();
      await cleanupRun(run);
    }
  }, 90_000);
});

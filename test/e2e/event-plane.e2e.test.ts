// The event plane with the real Claude Code CLI, offline against the model double: a scripted
// turn (prompt, text, one Bash call) reaches events.local.bob as AG-UI frames in order, and no
// frame carries the tool's argument or its result.
import { mkdirSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { renderHooksSettings, streamViolation } from "../../connector/index.js";
import { frameOf } from "../../schemas/index.js";
import { CONNECTOR_BUNDLE, ensureBuilt, HOOK_BUNDLE } from "../connector/built.js";
import { cleanupRun, nodeCommand, runClaude, writeMcpConfig, writeSettingsFile } from "../harness/claude-runner.js";
import { NatsServer, until } from "../harness/fixtures.js";
import { TestMesh } from "../harness/mesh.js";
import { ModelDouble } from "../harness/model-double.js";

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

describe("the event plane with the real claude CLI", () => {
  it("a scripted turn publishes run, text, tool-start and tool-end frames in order on events.local.bob, and no frame holds the tool's argument or result", async () => {
    const dir = path.join(root, "seat");
    const ctl = path.join(dir, "ctl");
    mkdirSync(ctl, { recursive: true, mode: 0o700 });
    const settings = await writeSettingsFile(dir, { hooks: renderHooksSettings({ command: (e) => nodeCommand(HOOK_BUNDLE, e) }) });
    const mcp = await writeMcpConfig(dir, { cotal: { type: "stdio", command: process.execPath, args: [CONNECTOR_BUNDLE] } });
    const double = await ModelDouble.start([
      { reply: ["Let me look.", { tool: "Bash", input: { command: `echo ${ARG}`, description: "echo" } }] },
      { reply: ["Done."], afterToolResult: "Bash" },
    ]);
    const run = await runClaude({
      baseUrl: double.url,
      prompt: "Say hi",
      args: ["--mcp-config", mcp, "--strict-mcp-config", "--settings", settings, "--permission-mode", "dontAsk", "--allowedTools", "Bash", "mcp__cotal__*"],
      env: { COTAL_SERVER: server.url, COTAL_SPACE: mesh.space, COTAL_NAME: "bob", COTAL_CONTROL_DIR: ctl, COTAL_LOG_FILE: path.join(dir, "connector.log"), COTAL_LOG_LEVEL: "debug" },
      timeoutMs: 60_000,
    });
    try {
      expect(run.code, run.stderr).toBe(0);
      const reader = await mesh.endpoint("reader");
      const stored = async () => (await reader.history("events.local.bob")).map((h) => ({ raw: JSON.stringify(h.message), frame: frameOf(h.message.parts)! }));
      // The connector flushes its WAL before it leaves (the session ended with the run).
      await until(async () => (await stored()).some((s) => s.frame.events.some((e) => e.type === "RUN_FINISHED")), 10_000, "RUN_FINISHED on events.local.bob");
      const frames = await stored();
      expect(frames.map((s) => s.frame.seq)).toEqual(frames.map((_, i) => i + 1));
      expect(frames.every((s) => s.frame.threadId === run.json?.session_id)).toBe(true);
      const events = frames.flatMap((s) => s.frame.events.map((e) => ({ ...e, runId: e.runId ?? s.frame.runId })));
      expect(events.map((e) => e.type)).toEqual([
        "RUN_STARTED",
        ...["TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END"],
        ...["TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END"],
        "TOOL_CALL_START",
        "TOOL_CALL_END",
        ...["TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END"],
        "RUN_FINISHED",
      ]);
      expect(events.filter((e) => e.type === "TEXT_MESSAGE_CONTENT").map((e) => e.delta)).toEqual(["Say hi", "Let me look.", "Done."]);
      expect(events.find((e) => e.type === "TOOL_CALL_START")?.toolCallName).toBe("Bash");
      expect(streamViolation(events)).toBeUndefined();
      for (const s of frames) expect(s.raw).not.toContain(ARG);
    } finally {
      await double.close();
      await cleanupRun(run);
    }
  }, 90_000);
});

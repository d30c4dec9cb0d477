// The real Claude Code CLI, offline, against the scripted model double: it calls a real MCP
// stdio server on the model's behalf, runs command hooks with real payloads, and shows the
// model the tool result and the SessionStart hook context.
import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  claudeEnv,
  cleanupRun,
  DUMMY_API_KEY,
  nodeCommand,
  projectRoot,
  runClaude,
  spawnClaude,
  writeMcpConfig,
  writeSettingsFile,
  type ClaudeRunResult,
} from "../harness/claude-runner.js";
import { allText, ModelDouble, toolResults } from "../../testbed/model-double.js";
import { until } from "../../testbed/until.js";

const fixture = (name: string): string => path.join(projectRoot, "test", "fixtures", name);

function readJsonLines(file: string): Array<Record<string, unknown>> {
  if (!existsSync(file)) return [];
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

function processGroupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

describe("real claude CLI against the model double", () => {
  const echoText = `ping-${process.pid}-${Date.now()}`;
  const marker = `COTAL-SESSION-MARKER-${Date.now()}`;
  const finalText = "Echo came back; all done.";
  let dir: string;
  let double: ModelDouble;
  let run: ClaudeRunResult;
  let callsFile: string;
  let hooksFile: string;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), "cotal-e2e-"));
    callsFile = path.join(dir, "mcp-calls.jsonl");
    hooksFile = path.join(dir, "hooks.jsonl");
    double = await ModelDouble.start([
      { reply: ["I'll call the echo tool.", { tool: "mcp__tiny__echo", input: { text: echoText } }] },
      { afterToolResult: "mcp__tiny__echo", reply: [finalText] },
    ]);
    const mcpConfig = await writeMcpConfig(dir, {
      tiny: { type: "stdio", command: process.execPath, args: [fixture("tiny-mcp-server.mjs")], env: { TINY_MCP_CALLS: callsFile } },
    });
    const hook = (...extra: string[]) => [{ type: "command" as const, command: nodeCommand(fixture("record-hook.mjs"), hooksFile, ...extra) }];
    const settings = await writeSettingsFile(dir, {
      hooks: {
        SessionStart: [{ hooks: hook(marker) }],
        PreToolUse: [{ matcher: "mcp__tiny__.*", hooks: hook() }],
        Stop: [{ hooks: hook() }],
      },
    });
    run = await runClaude({
      baseUrl: double.url,
      prompt: "Please echo something through the tiny server.",
      args: ["--mcp-config", mcpConfig, "--strict-mcp-config", "--settings", settings, "--permission-mode", "dontAsk", "--allowedTools", "mcp__tiny__*"],
      timeoutMs: 90_000,
    });
  }, 120_000);

  afterAll(async () => {
    await double?.close();
    if (run) await cleanupRun(run);
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("finishes with the scripted final text and no error", () => {
    expect(run.timedOut, run.stderr).toBe(false);
    expect(run.code, `stderr: ${run.stderr}\nstdout: ${run.stdout}`).toBe(0);
    expect(run.json).toMatchObject({ type: "result", subtype: "success", is_error: false, result: finalText, num_turns: 2 });
    expect(run.json?.permission_denials).toEqual([]);
  });

  it("really calls the MCP tool with the input the model scripted", () => {
    expect(readJsonLines(callsFile)).toEqual([{ tool: "echo", input: { text: echoText }, at: expect.any(Number) }]);
  });

  it("shows the model the tool result on its second turn, with both turns played from the script", () => {
    const main = double.mainRequests;
    expect(main.map((r) => r.step)).toEqual([0, 1]);
    expect(toolResults(main[1]!)).toEqual([
      { toolUseId: expect.stringMatching(/^toolu_/), name: "mcp__tiny__echo", text: `echo: ${echoText}`, isError: false },
    ]);
    expect(double.remainingSteps).toBe(0);
    // Whatever else the CLI asked the model for, it was not given script steps.
    expect(double.sideRequests.every((r) => r.step === undefined)).toBe(true);
  });

  it("runs command hooks with real payloads", () => {
    const payloads = readJsonLines(hooksFile);
    const sessionId = run.json?.session_id;
    expect(sessionId).toEqual(expect.any(String));
    const byEvent = (e: string) => payloads.filter((p) => p.hook_event_name === e);

    const [start] = byEvent("SessionStart");
    expect(start).toMatchObject({ session_id: sessionId, hook_event_name: "SessionStart", source: "startup", cwd: run.cwd });
    expect(start?.transcript_path).toEqual(expect.stringContaining(path.join(run.home, ".claude", "projects")));

    expect(byEvent("PreToolUse")).toEqual([
      expect.objectContaining({
        session_id: sessionId,
        transcript_path: start?.transcript_path,
        tool_name: "mcp__tiny__echo",
        tool_input: { text: echoText },
        tool_use_id: expect.stringMatching(/^toolu_/),
      }),
    ]);
    expect(byEvent("Stop")).toEqual([expect.objectContaining({ session_id: sessionId, stop_hook_active: false })]);
  });

  it("shows the model the SessionStart hook's additionalContext", () => {
    expect(allText(double.mainRequests[0]!)).toContain(marker);
  });

  it("leaves no claude process (or its MCP server / hooks) running", () => {
    expect(run.pid).toEqual(expect.any(Number));
    expect(processGroupAlive(run.pid!)).toBe(false);
  });
});

describe("a claude run killed mid-turn", () => {
  it("takes its MCP server down with it and leaves no process behind", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "cotal-e2e-kill-"));
    const startedFile = path.join(dir, "mcp-started.jsonl");
    // The first main-loop reply never comes in time: the CLI is mid-turn when we kill it.
    const double = await ModelDouble.start([{ delayMs: 60_000, reply: ["too late"] }]);
    const mcpConfig = await writeMcpConfig(dir, {
      tiny: { command: process.execPath, args: [fixture("tiny-mcp-server.mjs")], env: { TINY_MCP_STARTED: startedFile } },
    });
    const proc = await spawnClaude({
      baseUrl: double.url,
      prompt: "Wait for me.",
      args: ["--mcp-config", mcpConfig, "--strict-mcp-config", "--permission-mode", "dontAsk"],
      timeoutMs: 90_000,
    });
    try {
      await until(() => double.mainRequests.length === 1, 30_000, "claude's first main-loop request");
      await until(() => readJsonLines(startedFile).length === 1, 10_000, "the tiny MCP server to start");
      const mcpPid = readJsonLines(startedFile)[0]!.pid as number;

      proc.kill("SIGTERM");
      const result = await proc.done;
      expect(result.timedOut).toBe(false);
      expect(result.code).not.toBe(0);
      expect(processGroupAlive(proc.child.pid!)).toBe(false);
      await until(() => !processAlive(mcpPid), 5_000, "the tiny MCP server to exit");
    } finally {
      proc.kill("SIGKILL");
      await proc.done;
      await double.close();
      await cleanupRun(proc);
      await rm(dir, { recursive: true, force: true });
    }
  }, 120_000);
});

describe("claudeEnv", () => {
  it("builds a minimal offline environment without the host's Claude Code markers", () => {
    const parentEnv = {
      ...process.env,
      CLAUDECODE: "1",
      CLAUDE_CODE_ENTRYPOINT: "cli",
      CLAUDE_CONFIG_DIR: "/root/.claude",
      ANTHROPIC_API_KEY: "sk-real-key-must-not-leak",
      SOME_PARENT_VAR: "x",
    };
    const env = claudeEnv({ baseUrl: "http://127.0.0.1:1", home: "/tmp/h", env: { EXTRA: "y" }, parentEnv });
    expect(env).toMatchObject({
      HOME: "/tmp/h",
      ANTHROPIC_BASE_URL: "http://127.0.0.1:1",
      ANTHROPIC_API_KEY: DUMMY_API_KEY,
      DISABLE_AUTOUPDATER: "1",
      DISABLE_TELEMETRY: "1",
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
      EXTRA: "y",
    });
    expect(env.PATH?.split(path.delimiter)[0]).toBe(path.dirname(process.execPath));
    expect(env.IS_SANDBOX).toBe(process.getuid?.() === 0 ? "1" : undefined);
    for (const leaked of ["CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT", "CLAUDE_CONFIG_DIR", "SOME_PARENT_VAR"]) {
      expect(env[leaked], leaked).toBeUndefined();
    }
  });
});

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

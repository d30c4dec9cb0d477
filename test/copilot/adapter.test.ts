// The GitHub Copilot CLI adapter as pure policy (what is particular to Copilot; the contract every
// runtime keeps is test/runtime/): the private home built from the user's own (config.json with the
// folder trusted, mcp-config.json with Cotal's server), the posture as Copilot's permission flags,
// Cotal's hooks (a run: the deny floor alone), the auth pre-flight for a provider of one's own, the
// session reader for the event plane, how its JSON output maps to a typed RunResult, and the hook
// answer's context put where Copilot reads it.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { copilotRunResultOf, copilotRuntime, copilotTranscriptRecords, hooksFile, postureArgs } from "../../copilot/index.js";
import { withFlatContext, type RunExit } from "../../runtime/index.js";
import { runLaunchInput, seatLaunchInput, unitFolder } from "../harness/launch-inputs.js";

const root = unitFolder("copilot");
const home = join(root, "home");
mkdirSync(join(home, ".copilot"), { recursive: true });
writeFileSync(join(home, ".copilot", "config.json"), JSON.stringify({ trustedFolders: ["/theirs"], theme: "dark" }));
writeFileSync(join(home, ".copilot", "mcp-config.json"), JSON.stringify({ mcpServers: { gh: { type: "local", command: "gh-mcp" } } }));
const env = { HOME: home, PATH: "/usr/bin", COPILOT_PROVIDER_BASE_URL: "http://x", COPILOT_PROVIDER_API_KEY: "k", COPILOT_MODEL: "m", OTHER: "no" };
const host = { executable: "/usr/bin/copilot", connectorEntry: "/x/connector.mjs", parentEnv: env };
const input = runLaunchInput(root, { prompt: "P", persona: "PERSONA" });
const fileOf = (files: Array<{ path: string; content: string }>, end: string) => files.find((f) => f.path.endsWith(end))?.content;

describe("copilot launch", () => {
  it("a private COPILOT_HOME from the user's: the folder trusted, their MCP servers kept and Cotal's added for a seat; the provider passes through", async () => {
    const l = await copilotRuntime.buildSeat(host, seatLaunchInput(root, "/m"));
    const config = JSON.parse(fileOf(l.files, "/copilot/config.json")!);
    expect(config).toMatchObject({ trustedFolders: ["/theirs", root], theme: "dark", banner: "never" });
    const mcp = JSON.parse(fileOf(l.files, "/copilot/mcp-config.json")!);
    expect(Object.keys(mcp.mcpServers).sort()).toEqual(["cotal", "gh"]);
    expect(mcp.mcpServers.cotal).toMatchObject({
      type: "local",
      tools: ["*"],
      env: { COTAL_LAUNCH_MATERIAL: "/m", COTAL_JOIN_ON: "start", COTAL_RUNTIME: "copilot" },
    });
    expect(l.env).toMatchObject({
      COPILOT_HOME: join(l.privateDir, "copilot"),
      COPILOT_PROVIDER_BASE_URL: "http://x",
      COPILOT_MODEL: "m",
      COTAL_LAUNCH_MATERIAL: "/m",
    });
    expect(l.env.OTHER).toBeUndefined();
    expect(l.env.COPILOT_ALLOW_ALL).toBeUndefined();
    expect(l.args.join(" ")).not.toMatch(/allow-all|yolo/);
    const hooks = JSON.parse(fileOf(l.files, "/hooks/cotal.json")!);
    expect(Object.keys(hooks.hooks).sort()).toEqual(["Notification", "PreToolUse", "SessionEnd", "SessionStart", "Stop", "UserPromptSubmit"]);
    expect(hooks.hooks.UserPromptSubmit[0].command).toMatch(/"\/x\/hook\.mjs" UserPromptSubmit --flat-context$/);
    expect(hooks.hooks.PreToolUse[0].command).toMatch(/PreToolUse --deny-floor$/);
    const run = await copilotRuntime.buildRun(host, input);
    expect(fileOf(run.files, "/copilot/copilot-instructions.md")).toBe("PERSONA\n");
    expect(JSON.parse(fileOf(run.files, "/copilot/mcp-config.json")!).mcpServers.cotal).toBeUndefined();
    expect(run.args.slice(-3)).toEqual(["-s", "--output-format", "json"]);
  });

  it("a run's hooks are the deny floor alone (it has no connector)", () => {
    expect(Object.keys(JSON.parse(hooksFile("/x/connector.mjs", false)).hooks)).toEqual(["PreToolUse"]);
  });

  it("denies what Copilot would ask a person about unless the allow-list allows it; Cotal's server always runs", () => {
    expect(postureArgs([])).toEqual(["--no-ask-user", "--allow-tool", "cotal", "--deny-tool", "shell", "--deny-tool", "write", "--deny-tool", "url"]);
    expect(postureArgs(["Bash", "Edit", "Read", "mcp__gh__issues", "mcp__cotal__cotal_dm"])).toEqual([
      "--no-ask-user",
      "--allow-tool",
      "cotal",
      "--allow-tool",
      "shell",
      "--allow-tool",
      "write",
      "--allow-tool",
      "gh(issues)",
      "--deny-tool",
      "url",
    ]);
    expect(() => postureArgs(["Bash(git status:*)"])).toThrow(/Copilot would ask a person/);
    expect(() => postureArgs(["Frobnicate"])).toThrow(/names no tool GitHub Copilot CLI has/);
  });

  it("its pre-flight: a provider of one's own needs COPILOT_MODEL; no login, token or provider is not ready", () => {
    expect(copilotRuntime.auth({ parentEnv: env })).toMatchObject({
      ready: true,
      summary: expect.stringContaining("provider openai at COPILOT_PROVIDER_BASE_URL"),
    });
    expect(copilotRuntime.auth({ parentEnv: { ...env, COPILOT_MODEL: undefined } })).toMatchObject({
      ready: false,
      problem: expect.stringContaining("COPILOT_MODEL"),
    });
    expect(copilotRuntime.auth({ parentEnv: { HOME: home } })).toMatchObject({ ready: false, problem: expect.stringContaining("no login") });
    expect(copilotRuntime.auth({ parentEnv: { HOME: home, GH_TOKEN: "t" } })).toMatchObject({ ready: true });
  });
});

describe("copilot session reader (the event plane's records)", () => {
  it("reads the prompt as typed (never what a hook added), texts and tool requests by name, a result by id; nothing else", () => {
    const user = { type: "user.message", id: "1", timestamp: "t", data: { content: "You have new Cotal mail.", transformedContent: "MAIL-TEXT" } };
    expect(copilotTranscriptRecords(user)).toEqual([
      { type: "user", uuid: "1", timestamp: "t", message: { role: "user", content: "You have new Cotal mail." } },
    ]);
    expect(JSON.stringify(copilotTranscriptRecords(user))).not.toContain("MAIL-TEXT");
    const asked = {
      type: "assistant.message",
      id: "2",
      data: { content: "", toolRequests: [{ toolCallId: "c1", name: "cotal-cotal_dm", arguments: { text: "SECRET" } }] },
    };
    expect(copilotTranscriptRecords(asked)).toEqual([
      {
        type: "assistant",
        uuid: "2",
        message: { role: "assistant", content: [{ type: "tool_use", id: "c1", name: "cotal-cotal_dm" }], stop_reason: "tool_use" },
      },
    ]);
    expect(copilotTranscriptRecords({ type: "tool.execution_complete", id: "3", data: { toolCallId: "c1", result: "SECRET" } })).toEqual([
      { type: "user", uuid: "3", message: { role: "user", content: [{ type: "tool_result", tool_use_id: "c1" }] } },
    ]);
    expect(copilotTranscriptRecords({ type: "assistant.message", id: "4", data: { content: "done", toolRequests: [] } })[0]!.message.stop_reason).toBe(
      "end_turn",
    );
    for (const other of [
      { type: "hook.start", id: "5", data: { input: { prompt: "SECRET" } } },
      { type: "system.message", id: "6", data: { content: "x" } },
      null,
      7,
    ])
      expect(copilotTranscriptRecords(other)).toEqual([]);
  });
});

describe("copilot run result", () => {
  const spec = { runId: "r1", modelSource: "default" as const, timeoutMs: 60_000 };
  const exit = (stdout: string): RunExit => ({ code: 0, signal: null, timedOut: false, stdout, stderr: "", latencyMs: 3 });
  it("reads the last assistant message and the session id; cost 0 on the usage basis", () => {
    const out = [
      { type: "assistant.message", data: { content: "first" } },
      { type: "assistant.message", data: { content: "last" } },
      { type: "result", sessionId: "s-1", exitCode: 0 },
    ]
      .map((o) => JSON.stringify(o))
      .join("\n");
    expect(copilotRunResultOf(spec, exit(out))).toMatchObject({ status: "ok", output: "last", sessionId: "s-1", costUsd: 0, costBasis: "usage" });
    expect(copilotRunResultOf(spec, exit(JSON.stringify({ type: "result", sessionId: "s", exitCode: 1 })))).toMatchObject({
      status: "error",
      error: { kind: "failed" },
    });
  });
});

describe("the hook answer's context where Copilot reads it (--flat-context)", () => {
  it("copies hookSpecificOutput.additionalContext to the top level, and leaves an answer without one as it is", () => {
    const a = { hookSpecificOutput: { hookEventName: "UserPromptSubmit", additionalContext: "mail" } };
    expect(withFlatContext(a)).toEqual({ ...a, additionalContext: "mail" });
    expect(withFlatContext({})).toEqual({});
    expect(withFlatContext(null)).toBeNull();
  });
});

// The pi adapter as pure policy (what is particular to pi; the contract every runtime keeps is
// test/runtime/): the private agent folder built from the user's own (models.json, settings.json
// with Cotal's own extension entry taken out, login, APPEND_SYSTEM.md then the persona), the
// posture Cotal's extension holds (allow-list, deny floor), the journal it writes for the event
// plane, the auth pre-flight and how `pi -p --mode json` output maps to a typed RunResult.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { journalRecords, piRunResultOf, piRuntime, postureOf, refusalOf } from "../../pi/index.js";
import type { RunExit } from "../../runtime/index.js";
import { runLaunchInput, seatLaunchInput, unitFolder } from "../harness/launch-inputs.js";

const root = unitFolder("pi");
const home = join(root, "home");
const agentDir = join(home, ".pi", "agent");
mkdirSync(agentDir, { recursive: true });
writeFileSync(
  join(agentDir, "models.json"),
  JSON.stringify({ providers: { double: { baseUrl: "http://x", api: "anthropic-messages", apiKey: "MY_PI_KEY" } } }),
);
writeFileSync(join(agentDir, "settings.json"), JSON.stringify({ defaultProvider: "double", extensions: ["/old/plugin/bin/pi-extension.mjs", "/mine.ts"] }));
writeFileSync(join(agentDir, "auth.json"), '{"anthropic":{"type":"oauth"}}');
writeFileSync(join(agentDir, "APPEND_SYSTEM.md"), "USER-APPEND");
const host = { executable: "/usr/bin/pi", connectorEntry: "/x/connector.mjs", parentEnv: { HOME: home, PATH: "/usr/bin", MY_PI_KEY: "k", OTHER: "no" } };
const input = runLaunchInput(root, { prompt: "P", persona: "PERSONA" });
const fileOf = (files: Array<{ path: string; content: string }>, end: string) => files.find((f) => f.path.endsWith(end))?.content;

describe("pi launch", () => {
  it("copies the user's agent folder into a private one, without Cotal's own extension entry, the persona after their APPEND_SYSTEM.md", async () => {
    const l = await piRuntime.buildRun(host, input);
    expect(l.args).toEqual(["-e", "/x/pi-extension.mjs", "-p", "--mode", "json"]);
    expect(l.env).toMatchObject({
      PI_CODING_AGENT_DIR: join(l.privateDir, "agent"),
      PI_OFFLINE: "1",
      MY_PI_KEY: "k",
      COTAL_PI_MODE: "run",
      COTAL_PI_POSTURE: "{}",
    });
    expect(l.env.OTHER).toBeUndefined();
    expect(JSON.parse(fileOf(l.files, "/agent/settings.json")!)).toEqual({ defaultProvider: "double", extensions: ["/mine.ts"] });
    expect(fileOf(l.files, "/agent/models.json")).toContain("MY_PI_KEY");
    expect(fileOf(l.files, "/agent/auth.json")).toContain("oauth");
    expect(fileOf(l.files, "/agent/APPEND_SYSTEM.md")).toBe("USER-APPEND\n\nPERSONA\n");
    const seat = await piRuntime.buildSeat(host, seatLaunchInput(root, "/m", { model: "double/m" }));
    expect(seat.args).toEqual(["-e", "/x/pi-extension.mjs", "--model", "double/m"]);
    expect(seat.env).toMatchObject({ COTAL_LAUNCH_MATERIAL: "/m", COTAL_PI_MODE: "seat" });
  });

  it("refuses what pi cannot do as asked, before anything runs", () => {
    expect(() => piRuntime.buildRun(host, { ...input, agent: "x" })).toThrow(/subagent/);
    expect(() => piRuntime.buildRun(host, { ...input, launchOptions: { x: 1 } })).toThrow(/not one Cotal passes/);
    expect(() => piRuntime.buildRun(host, { ...input, allowedTools: ["mcp__github__issues"] })).toThrow(/names no tool pi has/);
  });

  it("its pre-flight names a key variable models.json reads that is not set, and never a value", () => {
    const a = piRuntime.auth({ parentEnv: { HOME: home } });
    expect(a).toMatchObject({ ready: false, problem: expect.stringContaining("MY_PI_KEY") });
    expect(piRuntime.auth({ parentEnv: { HOME: home, MY_PI_KEY: "secret-v" } })).toMatchObject({
      ready: true,
      summary: expect.stringContaining("keys from MY_PI_KEY"),
    });
    expect(JSON.stringify(piRuntime.auth({ parentEnv: { HOME: home, MY_PI_KEY: "secret-v" } }))).not.toContain("secret-v");
  });
});

describe("pi posture (Cotal's extension)", () => {
  it("the deny floor blocks a shell command whatever the allow-list; an allow-list runs only its tools, and Cotal's", () => {
    expect(refusalOf({}, "bash", { command: "ls && git push --force" })).toContain("git push --force*");
    expect(refusalOf({}, "bash", { command: "ls" })).toBeUndefined();
    const p = postureOf(["Bash(git status:*)", "Read", "mcp__cotal"]);
    expect(p).toEqual({ tools: ["bash", "read"], bash: ["git status"] });
    expect(refusalOf(p, "cotal_dm", {})).toBeUndefined();
    expect(refusalOf(p, "read", { path: "x" })).toBeUndefined();
    expect(refusalOf(p, "write", { path: "x" })).toContain("not in this agent's allowedTools");
    expect(refusalOf(p, "bash", { command: "git status -s" })).toBeUndefined();
    expect(refusalOf(p, "bash", { command: "rm x" })).toContain("git status…");
    expect(refusalOf(postureOf(["Bash"]), "bash", { command: "sudo ls" })).toContain("sudo *");
    expect(postureOf(["Bash", "Bash(git:*)"])).toEqual({ tools: ["bash"] });
  });
});

describe("pi journal (the event plane's records)", () => {
  let n = 0;
  const uuid = () => `u${++n}`;
  it("maps the prompt, the model's text and tool calls by name, and a result by id; never arguments, results or a hook's message", () => {
    expect(journalRecords({ role: "user", content: [{ type: "text", text: "hi" }] }, uuid, "t")).toMatchObject([{ type: "user", message: { content: "hi" } }]);
    const a = journalRecords(
      {
        role: "assistant",
        stopReason: "toolUse",
        content: [
          { type: "text", text: "ok" },
          { type: "toolCall", id: "c1", name: "bash", arguments: { command: "SECRET" } },
        ],
      },
      uuid,
      "t",
    );
    expect(a).toMatchObject([
      {
        type: "assistant",
        message: {
          stop_reason: "tool_use",
          content: [
            { type: "text", text: "ok" },
            { type: "tool_use", id: "c1", name: "bash" },
          ],
        },
      },
    ]);
    expect(JSON.stringify(a)).not.toContain("SECRET");
    expect(journalRecords({ role: "toolResult", toolCallId: "c1", content: [{ type: "text", text: "SECRET" }] }, uuid, "t")).toEqual([
      { type: "user", uuid: expect.any(String), timestamp: "t", message: { role: "user", content: [{ type: "tool_result", tool_use_id: "c1" }] } },
    ]);
    expect(journalRecords({ role: "assistant", stopReason: "stop", content: [{ type: "text", text: "done" }] }, uuid, "t")[0]!.message.stop_reason).toBe(
      "end_turn",
    );
    expect(journalRecords({ role: "assistant", stopReason: "error", content: [] }, uuid, "t")[0]).toMatchObject({ isApiErrorMessage: true });
    expect(journalRecords({ role: "custom", content: "mail" }, uuid, "t")).toEqual([]);
  });
});

describe("pi run result", () => {
  const spec = { runId: "r1", modelSource: "default" as const, timeoutMs: 60_000 };
  const exit = (stdout: string): RunExit => ({ code: 0, signal: null, timedOut: false, stdout, stderr: "", latencyMs: 3 });
  const line = (o: unknown) => JSON.stringify(o);
  const answer = (text: string, stopReason = "stop", cost = 0.25) => ({
    type: "message_end",
    message: {
      role: "assistant",
      content: [{ type: "text", text }],
      stopReason,
      usage: { input: 10, output: 2, cacheRead: 1, cacheWrite: 0, cost: { total: cost } },
    },
  });

  it("reads the last answer, pi's cost estimate and token usage summed over its calls, and the session", () => {
    const out = [
      line({ type: "session", id: "s-1" }),
      line(answer("thinking", "toolUse")),
      line(answer("done")),
      line({ type: "agent_end", messages: [] }),
    ].join("\n");
    expect(piRunResultOf(spec, exit(out))).toMatchObject({
      status: "ok",
      output: "done",
      sessionId: "s-1",
      costUsd: 0.5,
      costBasis: "client-estimate",
      usage: { input_tokens: 20, output_tokens: 4, cache_read_input_tokens: 2, cache_creation_input_tokens: 0 },
    });
  });

  it("an answer that stopped on an error is the run's error", () => {
    const failed = { type: "message_end", message: { role: "assistant", content: [], stopReason: "error", errorMessage: "401 invalid x-api-key" } };
    const out = [line({ type: "session", id: "s-2" }), line(failed), line({ type: "agent_end", messages: [] })].join("\n");
    expect(piRunResultOf(spec, exit(out))).toMatchObject({ status: "error", error: { kind: "failed", message: expect.stringContaining("invalid x-api-key") } });
  });
});

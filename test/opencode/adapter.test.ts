// The OpenCode adapter as pure policy: what a launch carries (prompt on stdin, persona
// in a 0600 file, never argv; the user's config read as it is; an allow-listed environment; the
// `cotal` agent's rules with the deny floor last; never --auto), what it refuses before anything
// runs, and how `opencode run --format json` output maps to a typed RunResult.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { OPENCODE, opencodeRuntime } from "../../opencode/index.js";
import { DENY_FLOOR_COMMANDS, type RunExit } from "../../runtime/index.js";
import { allowRuleOf, askRulesOf, postureRules as familyPostureRules } from "../../runtime/opencode-family/index.js";
import { runLaunchInput, seatLaunchInput, unitFolder } from "../harness/launch-inputs.js";

const postureRules = (allowedTools: readonly string[], asks: ReturnType<typeof askRulesOf> = []) => familyPostureRules(OPENCODE, allowedTools, asks);
const opencodeRunResultOf = opencodeRuntime.parseRun;
const setupOpencode = opencodeRuntime.setup;

const root = unitFolder("opencode");
const home = join(root, "home");
mkdirSync(join(home, ".config", "opencode"), { recursive: true });
mkdirSync(join(home, ".local", "share", "opencode"), { recursive: true });
const userConfig = join(home, ".config", "opencode", "opencode.json");
writeFileSync(userConfig, JSON.stringify({ model: "p/m", provider: { p: { options: { apiKey: "{env:P_KEY}" } } } }));
writeFileSync(join(home, ".local", "share", "opencode", "auth.json"), '{"p":{"type":"api","key":"from-login"}}');
const host = {
  executable: "/usr/bin/opencode",
  connectorEntry: "/x/connector.mjs",
  parentEnv: { HOME: home, PATH: "/usr/bin", P_KEY: "secret-p", OTHER_SECRET: "no", COTAL_LAUNCH_MATERIAL: "/m", CLAUDECODE: "1" },
};
const input = runLaunchInput(root);
const layerOf = (files: Array<{ path: string; content: string }>) =>
  JSON.parse(files.find((f) => f.path.endsWith("/opencode/opencode.json"))!.content) as {
    default_agent: string;
    instructions?: string[];
    agent: Record<string, { permission: Record<string, unknown>; model?: string }>;
    mcp?: Record<string, unknown>;
    plugin?: unknown[];
  };

describe("opencode launch", () => {
  it("puts the prompt on stdin and the persona in a 0600 file of the private home, never argv; runs as the cotal agent, never --auto", () => {
    const l = opencodeRuntime.buildRun(host, input);
    expect(l.args).toEqual(["run", "--format", "json", "--agent", "cotal"]);
    expect(l.args.join(" ")).not.toMatch(/PROMPT|PERSONA|--auto|yolo|dangerously/);
    expect(l.stdin).toBe("PROMPT-TEXT");
    const layer = layerOf(l.files);
    expect(layer.default_agent).toBe("cotal");
    const persona = l.files.find((f) => f.path === layer.instructions![0])!;
    expect(persona).toMatchObject({ content: "PERSONA-TEXT", mode: 0o600 });
    expect(l.files.every((f) => f.mode === 0o600 && f.path.startsWith(l.privateDir + "/"))).toBe(true);
    // The user's login copied into the private data folder; their config read where it is.
    expect(l.files.find((f) => f.path === join(l.privateDir, "data", "opencode", "auth.json"))?.content).toContain("from-login");
    expect(l.env).toMatchObject({ OPENCODE_CONFIG: userConfig, XDG_CONFIG_HOME: l.privateDir, XDG_DATA_HOME: join(l.privateDir, "data"), P_KEY: "secret-p" });
    expect(l.env.OTHER_SECRET).toBeUndefined();
    expect(l.env.COTAL_LAUNCH_MATERIAL).toBeUndefined();
    expect(l.env.CLAUDECODE).toBeUndefined();
    // A run has no MCP server and no plugin (no mail to hand over).
    expect(layer.mcp).toBeUndefined();
    expect(layer.plugin).toBeUndefined();
  });

  it("refuses, before anything runs, what OpenCode cannot do as asked", () => {
    expect(() => opencodeRuntime.buildRun(host, { ...input, launchOptions: { sandbox: "read-only" } })).toThrow(/not one Cotal passes/);
    expect(() => opencodeRuntime.buildRun(host, { ...input, model: "sonnet" })).toThrow(/provider/);
    expect(() => opencodeRuntime.buildRun(host, { ...input, allowedTools: ["Frobnicate"] })).toThrow(/names no tool OpenCode has/);
    expect(() => opencodeRuntime.buildRun(host, { ...input, agent: "reviewer" })).toThrow(/subagent/);
  });

  it("a seat gets the connector as MCP server (joining at start), Cotal's plugin refusing asks, and the launch material", async () => {
    const l = await opencodeRuntime.buildSeat(host, seatLaunchInput(root, "/m.json"));
    const layer = layerOf(l.files);
    expect(layer.mcp!.cotal).toMatchObject({ type: "local", environment: { COTAL_LAUNCH_MATERIAL: "/m.json", COTAL_JOIN_ON: "start" } });
    expect(layer.plugin![0]).toEqual(["file:///x/opencode-plugin.mjs", { node: process.execPath, hook: "/x/hook.mjs", unattended: true }]);
    expect(l.env.COTAL_LAUNCH_MATERIAL).toBe("/m.json");
    expect(l.args).toEqual([root]);
    // Its config folder reads as having OpenCode's plugin SDK installed (node_modules there, the
    // lockfile naming it), so OpenCode never installs it from the registry at a seat's start.
    const configDir = join(l.privateDir, "opencode");
    expect(l.files.some((f) => f.path.startsWith(join(configDir, "node_modules") + "/"))).toBe(true);
    const lock = JSON.parse(l.files.find((f) => f.path === join(configDir, "package-lock.json"))!.content) as {
      packages: Record<string, { dependencies: object }>;
    };
    expect(Object.keys(lock.packages[""]!.dependencies)).toContain("@opencode-ai/plugin");
  });
});

describe("opencode posture", () => {
  it("turns OpenCode's asks into denials, allows Cotal's tools, and puts the deny floor last, as bash deny rules", () => {
    const rules = postureRules([]);
    expect(rules).toMatchObject({ "cotal_*": "allow", doom_loop: "deny", question: "deny", external_directory: { "*": "deny" } });
    expect(rules["*"]).toBeUndefined();
    const bash = rules.bash as Record<string, string>;
    expect(Object.keys(bash)).toEqual([...DENY_FLOOR_COMMANDS]);
    expect(Object.values(bash).every((a) => a === "deny")).toBe(true);
    expect(Object.keys(rules).at(-1)).toBe("bash");
  });

  it("an allow-list denies the rest; its rules are Claude's names mapped to OpenCode's, and the floor still wins for bash", () => {
    const rules = postureRules(["Read", "Bash(git status:*)", "mcp__tiny__echo"]);
    expect(Object.keys(rules)[0]).toBe("*");
    expect(rules).toMatchObject({ "*": "deny", read: { "*": "allow", "*.env": "deny" }, tiny_echo: "allow", task: { "*": "deny" } });
    const bash = rules.bash as Record<string, string>;
    expect(Object.entries(bash)[0]).toEqual(["git status *", "allow"]);
    expect(bash["git push --force*"]).toBe("deny");
    expect(allowRuleOf(OPENCODE, "mcp__cotal")).toEqual({ permission: "cotal_*" });
  });

  it("what the user's own config would ask a person is refused, and an allow-list may still allow it", () => {
    const asks = askRulesOf(JSON.stringify({ permission: { bash: "ask", edit: { "*.md": "ask", "*": "allow" } } }));
    expect(asks).toEqual([{ permission: "bash" }, { permission: "edit", pattern: "*.md" }]);
    const rules = postureRules([], asks);
    expect((rules.bash as Record<string, string>)["*"]).toBe("deny");
    expect(rules.edit).toEqual({ "*.md": "deny" });
    expect(postureRules(["Bash(git status:*)"], asks).bash).toMatchObject({ "*": "deny", "git status *": "allow" });
    expect(askRulesOf("{ // a comment\n }")).toEqual([]);
  });
});

describe("opencode run result", () => {
  const spec = { runId: "r1", modelSource: "default" as const, timeoutMs: 60_000 };
  const exit = (stdout: string, o: Partial<RunExit> = {}): RunExit => ({ code: 0, signal: null, timedOut: false, stdout, stderr: "", latencyMs: 5, ...o });
  const line = (o: object) => JSON.stringify({ timestamp: 1, sessionID: "ses_1", ...o });

  it("the last text is the output; cost and tokens summed over the steps, as OpenCode's client estimate", () => {
    const out = [
      line({ type: "step_start", part: {} }),
      line({ type: "text", part: { type: "text", text: "first" } }),
      line({ type: "step_finish", part: { cost: 0.01, tokens: { input: 10, output: 2, reasoning: 1, cache: { read: 3, write: 4 } } } }),
      line({ type: "text", part: { type: "text", text: "ANSWER" } }),
      line({ type: "step_finish", part: { cost: 0.02, tokens: { input: 5, output: 1, reasoning: 0, cache: { read: 0, write: 0 } } } }),
    ].join("\n");
    expect(opencodeRunResultOf(spec, exit(out))).toMatchObject({
      status: "ok",
      output: "ANSWER",
      sessionId: "ses_1",
      costBasis: "client-estimate",
      costUsd: 0.03,
      usage: { input_tokens: 15, output_tokens: 4, cache_read_input_tokens: 3, cache_creation_input_tokens: 4 },
    });
  });

  it("an error event, a timeout and an empty run are typed failures", () => {
    expect(
      opencodeRunResultOf(spec, exit(line({ type: "error", error: { name: "UnknownError", data: { message: "Model not found" } } }), { code: 1 })),
    ).toMatchObject({
      status: "error",
      error: { kind: "failed", message: expect.stringContaining("Model not found") },
    });
    expect(opencodeRunResultOf(spec, exit("", { timedOut: true, signal: "SIGKILL" }))).toMatchObject({ status: "timeout", error: { kind: "timeout" } });
    expect(opencodeRunResultOf(spec, exit("", { code: 1, stderr: "boom" }))).toMatchObject({
      status: "error",
      error: { kind: "no-result", message: expect.stringContaining("boom") },
    });
  });
});

describe("cotal setup --runtime opencode", () => {
  it("adds Cotal's MCP server and plugin to the user's config, keeps the rest, and a second run changes nothing", async () => {
    const env = { HOME: home };
    const first = await setupOpencode({ env, connectorEntry: "/x/connector.mjs", check: false });
    expect(first.files).toEqual([{ path: userConfig, action: "updated" }]);
    const doc = JSON.parse(readFileSync(userConfig, "utf8")) as { model: string; mcp: Record<string, unknown>; plugin: unknown[] };
    expect(doc.model).toBe("p/m");
    expect(doc.mcp.cotal).toMatchObject({ type: "local", environment: { COTAL_RUNTIME: "opencode" } });
    expect(doc.plugin).toEqual([["file:///x/opencode-plugin.mjs", { node: process.execPath, hook: "/x/hook.mjs" }]]);
    expect((await setupOpencode({ env, connectorEntry: "/x/connector.mjs", check: true })).files[0]!.action).toBe("ok");
    expect((await setupOpencode({ env, connectorEntry: "/x/connector.mjs", check: false })).files[0]!.action).toBe("ok");
  });
});

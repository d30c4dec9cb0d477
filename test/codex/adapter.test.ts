// The Codex adapter: what a launch carries (no persona or key in argv, no approval
// bypass, the user's config copied, an allow-listed environment, the deny floor's hook trusted by
// the real codex), what it refuses, and how `codex exec --json` output maps to a typed RunResult.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { codexRunResultOf, codexRuntime } from "../../codex/index.js";
import type { RunExit, RuntimeLaunch } from "../../runtime/index.js";
import { projectRoot } from "../harness/cli.js";
import { runLaunchInput, seatLaunchInput, unitFolder } from "../harness/launch-inputs.js";
import { RuntimeLaunchError } from "../../schemas/index.js";

const root = unitFolder("codex");
const home = join(root, "home");
mkdirSync(join(home, ".codex"), { recursive: true });
// A valid provider: Codex reads this copy when it lists the launch's hooks (an invalid config lists none).
const USER_CONFIG = 'model_provider = "p"\n[model_providers.p]\nname = "p"\nbase_url = "http://127.0.0.1:9/v1"\nwire_api = "responses"\nenv_key = "P_KEY"\n';
writeFileSync(join(home, ".codex", "config.toml"), USER_CONFIG);
writeFileSync(join(home, ".codex", "auth.json"), '{"OPENAI_API_KEY":"from-login"}');
const host = {
  // The pinned CLI: a launch's home is written, and its hooks trusted, by asking it (`codex app-server`).
  executable: join(projectRoot, "node_modules", ".bin", "codex"),
  connectorEntry: "/x/connector.mjs",
  parentEnv: {
    HOME: home,
    PATH: process.env.PATH ?? "/usr/bin",
    P_KEY: "secret-p",
    ANTHROPIC_API_KEY: "not-for-codex",
    COTAL_LAUNCH_MATERIAL: "/m",
    CLAUDECODE: "1",
  },
};
const input = runLaunchInput(root);

/** Cotal's files in a written launch home (Codex adds its own state there once it runs), each checked 0600 in a 0700 directory. */
const COTAL_FILES = ["auth.json", "config.toml", "cotal.config.toml", "hooks.json"];
function homeOf(l: RuntimeLaunch): Record<string, string> {
  expect(statSync(l.privateDir).mode & 0o777).toBe(0o700);
  return Object.fromEntries(
    readdirSync(l.privateDir)
      .filter((f) => COTAL_FILES.includes(f))
      .map((f) => {
        expect(statSync(join(l.privateDir, f)).mode & 0o777, f).toBe(0o600);
        return [f, readFileSync(join(l.privateDir, f), "utf8")];
      }),
  );
}

/** A seat's launch (its home written) in a fresh seat folder. */
const buildSeat = (name: string, posture?: "supervised") => {
  const seatDir = mkdtempSync(join(root, "seat-"));
  return codexRuntime.buildSeat(host, seatLaunchInput(root, join(seatDir, "material.json"), { name, seatDir, posture }));
};

type HooksFile = { hooks: Record<string, Array<{ matcher?: string; hooks: Array<{ command: string; timeout: number }> }>> };

describe("codex launch", () => {
  it("puts the prompt on stdin and the persona in the private layer, never argv; approval never in the workspace sandbox, no bypass", async () => {
    const l = await codexRuntime.buildRun(host, input);
    expect(l.args.join(" ")).not.toMatch(/PROMPT-TEXT|PERSONA-TEXT|dangerously/);
    expect(l.stdin).toBe("PROMPT-TEXT");
    expect(l.args).toEqual(["exec", "--json", "--skip-git-repo-check", "--ephemeral", "-p", "cotal", "-C", root, "-"]);
    // The home is written when the run is built (its hook is trusted then): nothing is left to write.
    expect(l.files).toEqual([]);
    const layer = homeOf(l)["cotal.config.toml"]!;
    expect(layer).toContain('developer_instructions = "PERSONA-TEXT"');
    expect(layer).toContain('approval_policy = "never"');
    expect(layer).toContain('sandbox_mode = "workspace-write"');
    expect(l.permissionMode).toBe("approval never, sandbox workspace-write");
  }, 60_000);

  it("a run's home holds the deny floor: Codex's PreToolUse on its shell tool runs the hook command with --deny-floor, trusted", async () => {
    const l = await codexRuntime.buildRun(host, input);
    const files = homeOf(l);
    const hooks = (JSON.parse(files["hooks.json"]!) as HooksFile).hooks;
    expect(Object.keys(hooks)).toEqual(["PreToolUse"]);
    expect(hooks.PreToolUse).toEqual([
      { matcher: "Bash", hooks: [expect.objectContaining({ command: `"${process.execPath}" "/x/hook.mjs" PreToolUse --deny-floor` })] },
    ]);
    // Trusted the way Codex's /hooks review trusts a hook: its key and hash in the home's config.toml.
    expect(files["config.toml"]).toContain(`[hooks.state.${JSON.stringify(`${l.privateDir}/hooks.json:pre_tool_use:0:0`)}]\ntrusted_hash = "`);
  }, 60_000);

  it("a seat's home holds the connector's hooks, the deny floor on PreToolUse and PermissionRequest for approval state, all trusted", async () => {
    const l = await buildSeat("bob");
    const files = homeOf(l);
    const hooks = (JSON.parse(files["hooks.json"]!) as HooksFile).hooks;
    expect(Object.keys(hooks)).toEqual(["SessionStart", "UserPromptSubmit", "PreToolUse", "PermissionRequest", "Stop"]);
    expect(hooks.PreToolUse![0]).toMatchObject({ matcher: "Bash", hooks: [{ command: expect.stringMatching(/hook\.mjs" PreToolUse --deny-floor$/) }] });
    expect(hooks.PermissionRequest![0]!.hooks[0]!.command).toMatch(/hook\.mjs" PermissionRequest$/);
    expect(files["config.toml"]!.match(/trusted_hash = /g)).toHaveLength(5);
    expect(files["cotal.config.toml"]).toContain("[mcp_servers.cotal]");
    expect(files["cotal.config.toml"]).toContain('approval_policy = "never"');
  }, 60_000);

  it("a supervised seat runs approval on-request in the same sandbox, floor and all; its PermissionRequest hook may wait out an ask's bound", async () => {
    const l = await buildSeat("sup", "supervised");
    const files = homeOf(l);
    expect(files["cotal.config.toml"]).toContain('approval_policy = "on-request"');
    expect(files["cotal.config.toml"]).toContain('sandbox_mode = "workspace-write"');
    expect(l.permissionMode).toBe("approval on-request, sandbox workspace-write");
    const hooks = (JSON.parse(files["hooks.json"]!) as HooksFile).hooks;
    expect(hooks.PreToolUse![0]).toMatchObject({ matcher: "Bash", hooks: [{ command: expect.stringMatching(/hook\.mjs" PreToolUse --deny-floor$/) }] });
    // The connector's bound on an ask is at most 9 minutes: Codex must not kill the hook first.
    expect(hooks.PermissionRequest![0]!.hooks[0]!.timeout).toBeGreaterThan(540);
  }, 60_000);

  it("copies the user's config.toml and auth.json into the private home and passes only allow-listed variables (with the provider's env_key)", async () => {
    const l = await codexRuntime.buildRun(host, input);
    expect(Object.keys(homeOf(l)).sort()).toEqual(COTAL_FILES);
    expect(homeOf(l)["config.toml"]!.startsWith(USER_CONFIG)).toBe(true);
    expect(l.env).toEqual({ HOME: home, PATH: host.parentEnv.PATH, P_KEY: "secret-p", CODEX_HOME: l.privateDir });
  }, 60_000);

  it("refuses Claude-only agent file settings, naming them", async () => {
    await expect(codexRuntime.buildRun(host, { ...input, allowedTools: ["Read"] })).rejects.toThrow(RuntimeLaunchError);
    await expect(codexRuntime.buildRun(host, { ...input, launchOptions: { "permission-mode": "dontAsk" } })).rejects.toThrow(/not one Cotal passes to Codex/);
    expect((await codexRuntime.buildRun(host, { ...input, launchOptions: { sandbox: "read-only" } })).permissionMode).toBe("approval never, sandbox read-only");
  }, 60_000);

  it("auth names the config, provider and key variable, never a value; a missing key variable is not ready", () => {
    const a = codexRuntime.auth(host);
    expect(a).toMatchObject({ ready: true });
    expect(a.summary).toContain("provider p");
    expect(a.summary).not.toContain("secret-p");
    expect(codexRuntime.auth({ parentEnv: { HOME: home } })).toMatchObject({ ready: false, problem: expect.stringContaining("P_KEY") });
  });
});

describe("codex run result", () => {
  const spec = { runId: "r1", modelSource: "default" as const, timeoutMs: 60_000, fallbackCostUsd: 0.05 };
  const exit = (over: Partial<RunExit>): RunExit => ({ code: 0, signal: null, timedOut: false, stdout: "", stderr: "", latencyMs: 5, ...over });
  const lines = (...e: object[]) => e.map((x) => JSON.stringify(x)).join("\n");
  const done = lines(
    { type: "thread.started", thread_id: "t-1" },
    { type: "item.completed", item: { type: "agent_message", text: '{"a":1}' } },
    { type: "turn.completed", usage: { input_tokens: 9, cached_input_tokens: 2, output_tokens: 3 } },
  );

  it("maps output, usage (cached tokens as cache reads) and the thread id; cost is usage-based", () => {
    expect(codexRunResultOf(spec, exit({ stdout: done }))).toMatchObject({
      status: "ok",
      output: '{"a":1}',
      costUsd: 0,
      costBasis: "usage",
      usage: { input_tokens: 9, output_tokens: 3, cache_read_input_tokens: 2 },
      sessionId: "t-1",
    });
    expect(codexRunResultOf({ ...spec, jsonSchema: {} }, exit({ stdout: done })).output).toEqual({ a: 1 });
  });

  it("a failed turn, no turn at all and a timeout each differ; a killed run counts the median", () => {
    expect(codexRunResultOf(spec, exit({ stdout: lines({ type: "turn.failed", error: { message: "boom" } }) })).error).toEqual({
      kind: "failed",
      message: "Codex reported an error: boom",
    });
    expect(codexRunResultOf(spec, exit({ code: 1, stderr: "nope" })).error?.kind).toBe("no-result");
    const t = codexRunResultOf(spec, exit({ timedOut: true, signal: "SIGTERM" }));
    expect(t).toMatchObject({ status: "timeout", costUsd: 0.05, costBasis: "median-estimate" });
  });
});

// `cotal setup --allow-tools` from the BUILT CLI: it adds the allow rule for the plugin's own
// tools to the user's Claude settings (HOME or CLAUDE_CONFIG_DIR), shows exactly what it wrote,
// keeps every other setting, is idempotent, refuses a file it cannot read as JSON (untouched);
// without the flag (and no terminal to ask at) it only says how. Then the real claude CLI, with
// only that settings file, runs a cotal tool instead of refusing it.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { applyAllowRule, planAllowRule, PLUGIN_ALLOW_RULE } from "../../claude/index.js";
import { cleanupRun, OFFLINE_ENV, projectRoot, runClaude } from "../harness/claude-runner.js";
import { buildCli, runCotal } from "../harness/cli.js";
import { ModelDouble, toolResults } from "../../testbed/model-double.js";

const root = mkdtempSync(path.join(os.tmpdir(), "cotal-allow-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
beforeAll(async () => {
  await buildCli();
});

let n = 0;
/** A fresh HOME and Cotal home; no claude CLI on PATH (setup then writes files and prints the install line). */
function fresh(extra: Record<string, string> = {}): { home: string; env: NodeJS.ProcessEnv; project: string } {
  const dir = path.join(root, `u${++n}`);
  const home = path.join(dir, "home");
  const project = path.join(dir, "project");
  mkdirSync(home, { recursive: true });
  mkdirSync(project, { recursive: true });
  return {
    home,
    project,
    env: {
      PATH: [path.dirname(process.execPath), "/usr/bin", "/bin"].join(path.delimiter),
      HOME: home,
      COTAL_HOME: path.join(dir, "cotal-home"),
      COTAL_CLAUDE_BIN: path.join(dir, "no-such-claude"),
      LANG: "C.UTF-8",
      ...OFFLINE_ENV,
      ...extra,
    },
  };
}

describe("the allow rule for the plugin's tools", () => {
  it("plans and applies: appended to permissions.allow, other settings kept, a covering rule counts as present", () => {
    const file = path.join(root, "plan", "settings.json");
    expect(planAllowRule(file)).toMatchObject({ state: "add", exists: false, allow: [PLUGIN_ALLOW_RULE] });
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, JSON.stringify({ theme: "dark", permissions: { allow: ["Bash(ls)"], deny: ["Bash(rm *)"] } }), { mode: 0o644 });
    const plan = planAllowRule(file);
    applyAllowRule(plan);
    expect(JSON.parse(readFileSync(file, "utf8"))).toEqual({ theme: "dark", permissions: { allow: ["Bash(ls)", PLUGIN_ALLOW_RULE], deny: ["Bash(rm *)"] } });
    expect(statSync(file).mode & 0o777).toBe(0o644);
    expect(planAllowRule(file).state).toBe("present");
    writeFileSync(file, JSON.stringify({ permissions: { allow: [`${PLUGIN_ALLOW_RULE}__*`] } }));
    expect(planAllowRule(file).state).toBe("present");
  });

  it("cotal setup --allow-tools writes the rule to ~/.claude/settings.json, shows it, keeps the rest, and is idempotent", async () => {
    const u = fresh();
    const settings = path.join(u.home, ".claude", "settings.json");
    mkdirSync(path.dirname(settings), { recursive: true });
    writeFileSync(settings, JSON.stringify({ model: "opus", permissions: { allow: ["Read"] } }, null, 2));
    const r = await runCotal(["setup", "--allow-tools"], { cwd: u.project, env: u.env });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`allow rule   added "${PLUGIN_ALLOW_RULE}" (every other setting kept):`);
    expect(r.stdout).toContain(`in ${settings}:`);
    expect(r.stdout).toMatch(/"allow": \[\s+"Read",\s+"mcp__plugin_cotal_cotal"\s+\]/);
    expect(JSON.parse(readFileSync(settings, "utf8"))).toEqual({ model: "opus", permissions: { allow: ["Read", PLUGIN_ALLOW_RULE] } });

    const again = await runCotal(["setup", "--allow-tools", "--json"], { cwd: u.project, env: u.env });
    expect(again.json()).toMatchObject({ allowRule: { file: settings, rule: PLUGIN_ALLOW_RULE, state: "present" } });
    expect(JSON.parse(readFileSync(settings, "utf8")).permissions.allow).toEqual(["Read", PLUGIN_ALLOW_RULE]);

    const check = await runCotal(["setup", "--check", "--json"], { cwd: u.project, env: u.env });
    expect(check.json()).toMatchObject({ allowRule: { state: "present" } });
  });

  it("writes to $CLAUDE_CONFIG_DIR/settings.json when set", async () => {
    const config = path.join(root, "config-dir");
    const u = fresh({ CLAUDE_CONFIG_DIR: config });
    const r = await runCotal(["setup", "--allow-tools", "--json"], { cwd: u.project, env: u.env });
    expect(r.json()).toMatchObject({ allowRule: { file: path.join(config, "settings.json"), state: "added" } });
    expect(JSON.parse(readFileSync(path.join(config, "settings.json"), "utf8"))).toEqual({ permissions: { allow: [PLUGIN_ALLOW_RULE] } });
  });

  it("without --allow-tools and no terminal to ask at, it writes nothing and says how", async () => {
    const u = fresh();
    const r = await runCotal(["setup"], { cwd: u.project, env: u.env });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`allow rule   not set: Claude asks before every cotal_* call. \`cotal setup --allow-tools\` adds "${PLUGIN_ALLOW_RULE}"`);
    expect(() => statSync(path.join(u.home, ".claude", "settings.json"))).toThrow();
  });

  it("refuses a settings file that is not JSON, leaving it untouched, with the remedy", async () => {
    const u = fresh();
    const settings = path.join(u.home, ".claude", "settings.json");
    mkdirSync(path.dirname(settings), { recursive: true });
    writeFileSync(settings, "{ not json");
    const r = await runCotal(["setup", "--allow-tools"], { cwd: u.project, env: u.env });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(`Cannot add the Cotal allow rule to ${settings}: it is not valid JSON.`);
    expect(r.stderr).toContain(`add "${PLUGIN_ALLOW_RULE}" to "permissions"."allow"`);
    expect(readFileSync(settings, "utf8")).toBe("{ not json");
  });

  it("refuses --allow-tools with --check or --print-plugin-dir", async () => {
    const u = fresh();
    for (const args of [
      ["--check", "--allow-tools"],
      ["--print-plugin-dir", "--allow-tools"],
    ]) {
      const r = await runCotal(["setup", ...args], { cwd: u.project, env: u.env });
      expect(r.code, args.join(" ")).not.toBe(0);
    }
  });

  it("with only the rule setup wrote, the real claude runs a cotal tool instead of refusing it", async () => {
    const u = fresh();
    await runCotal(["setup", "--allow-tools"], { cwd: u.project, env: u.env });
    const tool = "mcp__plugin_cotal_cotal__cotal_join_help";
    const double = await ModelDouble.start([{ reply: [{ tool, input: {} }] }, { afterToolResult: tool, reply: ["Read the help."] }]);
    const run = await runClaude({
      baseUrl: double.url,
      prompt: "How do I join?",
      home: u.home,
      args: ["--plugin-dir", path.join(projectRoot, "plugin")],
      timeoutMs: 60_000,
    });
    try {
      expect(run.json, run.stderr).toMatchObject({ is_error: false, result: "Read the help.", permission_denials: [] });
      expect(toolResults(double.mainRequests[1]!).find((r) => r.name === tool)).toMatchObject({ isError: false });
    } finally {
      await cleanupRun(run);
      await double.close();
    }
  }, 90_000);
});

// `cotal setup --runtime codex` through the shipped CLI: in a user's own Codex home that
// already holds their settings, it adds Cotal's MCP server and hooks, keeps everything of theirs,
// and trusts exactly Cotal's hooks the way Codex's /hooks review does — proven by the real codex
// (its app-server lists them as trusted, which `--check` asks). Running it again changes nothing.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildCli, cleanEnv, runCotal } from "../harness/cli.js";

let home: string;
let env: NodeJS.ProcessEnv;
const USER_CONFIG = 'model = "mine"\n\n[mcp_servers.other]\ncommand = "true"\n';
const USER_HOOKS = { hooks: { Stop: [{ hooks: [{ type: "command", command: "echo user-stop" }] }] } };
const cotal = (args: string[]) => runCotal(["setup", "--runtime", "codex", ...args], { cwd: home, env, timeoutMs: 60_000 });

beforeAll(async () => {
  await buildCli();
  home = await mkdtemp(join(tmpdir(), "cotal-setup-codex-"));
  mkdirSync(join(home, ".codex"));
  writeFileSync(join(home, ".codex", "config.toml"), USER_CONFIG);
  writeFileSync(join(home, ".codex", "hooks.json"), JSON.stringify(USER_HOOKS));
  env = cleanEnv({ HOME: home });
}, 120_000);

afterAll(async () => {
  if (home) await rm(home, { recursive: true, force: true });
});

describe("cotal setup --runtime codex", () => {
  it("--check says what is missing and exits 1, changing nothing", async () => {
    const r = await cotal(["--check"]);
    expect(r.code, r.stdout + r.stderr).toBe(1);
    expect(r.stdout).toMatch(/stale\s+.*config\.toml/);
    expect(readFileSync(join(home, ".codex", "config.toml"), "utf8")).toBe(USER_CONFIG);
  });

  it("adds the MCP server and hooks beside the user's own, and Codex reads exactly Cotal's hooks as trusted", async () => {
    const r = await cotal(["--json"]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.json()).toMatchObject({ runtime: "codex", trusted: 5 });
    const config = readFileSync(join(home, ".codex", "config.toml"), "utf8");
    expect(config.startsWith(USER_CONFIG)).toBe(true);
    expect(config).toContain("[mcp_servers.cotal]");
    expect(config).toContain('default_tools_approval_mode = "approve"');
    // The connector Codex starts from it says it runs in Codex (its card's runtime, the rollout its plane reads).
    expect(config).toContain('env = { COTAL_RUNTIME = "codex" }');
    const hooks = JSON.parse(readFileSync(join(home, ".codex", "hooks.json"), "utf8")) as {
      hooks: Record<string, Array<{ hooks: Array<{ command: string }> }>>;
    };
    expect(hooks.hooks.Stop!.map((g) => g.hooks[0]!.command)).toEqual(["echo user-stop", expect.stringMatching(/hook\.mjs" Stop$/)]);
    expect(Object.keys(hooks.hooks).sort()).toEqual(["PermissionRequest", "PreToolUse", "SessionStart", "Stop", "UserPromptSubmit"]);
    // A hand-started session is the user's: no deny floor on its shell tool (a managed seat's and a run's have it).
    expect(hooks.hooks.PreToolUse!.map((g) => g.hooks[0]!.command)).toEqual([expect.stringMatching(/hook\.mjs" PreToolUse$/)]);
    // Only Cotal's hooks are trusted: the user's own Stop hook is left for them to review.
    expect(config.match(/trusted_hash/g)).toHaveLength(5);
    expect(config).not.toContain("hooks.json:stop:0:0");
  }, 60_000);

  it("again: --check passes, and nothing changes", async () => {
    const before = readFileSync(join(home, ".codex", "config.toml"), "utf8");
    const check = await cotal(["--check"]);
    expect(check.code, check.stdout + check.stderr).toBe(0);
    expect(check.stdout).toContain("5 of Cotal's hooks trusted");
    expect((await cotal([])).code).toBe(0);
    expect(readFileSync(join(home, ".codex", "config.toml"), "utf8")).toBe(before);
  }, 60_000);
});

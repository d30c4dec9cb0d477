// `cotal setup --runtime opencode` through the shipped CLI: in a user's own OpenCode
// config that already holds their settings, it adds Cotal's MCP server and plugin and keeps
// everything of theirs; the real opencode resolves both from it (`opencode debug config`).
// Running it again changes nothing.
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OPENCODE } from "../../opencode/index.js";
import { pluginSdkInstalledFiles } from "../../runtime/opencode-family/index.js";
import { buildCli, cleanEnv, runCotal } from "../harness/cli.js";
import { expectSetupRerunChangesNothing } from "../harness/setup-cases.js";

let home: string;
let env: NodeJS.ProcessEnv;
const USER = { model: "anthropic/claude-double", theme: "mine", mcp: { other: { type: "local", command: ["true"], enabled: false } } };
const cotal = (args: string[]) => runCotal(["setup", "--runtime", "opencode", ...args], { cwd: home, env, timeoutMs: 60_000 });
const configFile = () => join(home, ".config", "opencode", "opencode.json");

/** `opencode debug config` as the user runs it: the configuration OpenCode resolves. */
function resolvedConfig(): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(join(process.cwd(), "node_modules", ".bin", "opencode"), ["debug", "config"], { cwd: home, env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.setEncoding("utf8").on("data", (s: string) => (out += s));
    child.stderr.setEncoding("utf8").on("data", (s: string) => (err += s));
    child.on("error", reject);
    child.on("close", (code) => (code === 0 ? resolve(out) : reject(new Error(`opencode debug config exited ${code}: ${err.slice(-500)}`))));
  });
}

beforeAll(async () => {
  await buildCli();
  home = await mkdtemp(join(tmpdir(), "cotal-setup-opencode-"));
  mkdirSync(join(home, ".config", "opencode"), { recursive: true });
  writeFileSync(configFile(), JSON.stringify(USER, null, 2));
  // A user's OpenCode installed its plugin SDK into this folder at its first start (it does so in
  // every config folder, from the npm registry, and waits for it once a plugin is configured):
  // seeded as installed, as a seat's is, so the test never reaches the registry.
  for (const f of pluginSdkInstalledFiles(join(home, ".config", "opencode"), OPENCODE.pluginSdk)) {
    mkdirSync(dirname(f.path), { recursive: true });
    writeFileSync(f.path, f.content, { mode: f.mode });
  }
  env = cleanEnv({ HOME: home, OPENCODE_DISABLE_MODELS_FETCH: "1" });
}, 120_000);

afterAll(async () => {
  if (home) await rm(home, { recursive: true, force: true });
});

describe("cotal setup --runtime opencode", () => {
  it("--check says what is missing and exits 1, changing nothing", async () => {
    const r = await cotal(["--check"]);
    expect(r.code, r.stdout + r.stderr).toBe(1);
    expect(r.stdout).toMatch(/stale\s+.*opencode\.json/);
    expect(JSON.parse(readFileSync(configFile(), "utf8"))).toEqual(USER);
  });

  it("adds the MCP server and the plugin beside the user's own settings, and OpenCode resolves both", async () => {
    const r = await cotal(["--json"]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.json()).toMatchObject({ runtime: "opencode", trusted: 6, files: [{ path: configFile(), action: "updated" }] });
    const doc = JSON.parse(readFileSync(configFile(), "utf8")) as typeof USER & {
      mcp: Record<string, { command: string[]; environment: object }>;
      plugin: unknown[];
    };
    expect(doc).toMatchObject({ model: USER.model, theme: "mine", mcp: { other: USER.mcp.other } });
    expect(doc.mcp.cotal!.command.at(-1)).toMatch(/plugin\/bin\/connector\.mjs$/);
    expect(doc.mcp.cotal!.environment).toEqual({ COTAL_RUNTIME: "opencode" });
    expect(doc.plugin).toHaveLength(1);
    const resolved = await resolvedConfig();
    expect(resolved).toContain("opencode-plugin.mjs");
    // The seeded folder was taken as installed: OpenCode fetched nothing into it.
    expect(existsSync(join(home, ".config", "opencode", "node_modules", "@opencode-ai"))).toBe(false);
    expect(resolved).toMatch(/"cotal":\s*\{[^}]*"type":\s*"local"/);
  }, 180_000);

  it("running it again changes nothing, and --check passes", () => expectSetupRerunChangesNothing(cotal, configFile()));
});

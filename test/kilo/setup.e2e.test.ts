// `cotal setup --runtime kilo` through the shipped CLI: in a user's own Kilo Code config that
// already holds their settings, it adds Cotal's MCP server and plugin and keeps everything of
// theirs; the real kilo resolves both from it (`kilo debug config`). Running it again changes
// nothing.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KILO } from "../../kilo/index.js";
import { pluginSdkInstalledFiles } from "../../runtime/opencode-family/index.js";
import { buildCli, cleanEnv, runCotal } from "../harness/cli.js";
import { expectSetupRerunChangesNothing } from "../harness/setup-cases.js";
import { runUserCli } from "../harness/user-cli.js";

let home: string;
let env: NodeJS.ProcessEnv;
const USER = { model: "anthropic/claude-double", username: "mine", mcp: { other: { type: "local", command: ["true"], enabled: false } } };
const cotal = (args: string[]) => runCotal(["setup", "--runtime", "kilo", ...args], { cwd: home, env, timeoutMs: 60_000 });
const configDir = () => join(home, ".config", "kilo");
const configFile = () => join(configDir(), "kilo.json");

/** `kilo debug config` as the user runs it: the configuration Kilo resolves. */
async function resolvedConfig(): Promise<string> {
  const r = await runUserCli("kilo", ["debug", "config"], { cwd: home, env });
  expect(r.code, r.out.slice(-500)).toBe(0);
  return r.out;
}

beforeAll(async () => {
  await buildCli();
  home = await mkdtemp(join(tmpdir(), "cotal-setup-kilo-"));
  mkdirSync(configDir(), { recursive: true });
  writeFileSync(configFile(), JSON.stringify(USER, null, 2));
  // A user's Kilo ran here before: its first start marked its one-time migration of the global
  // config done and installed its plugin SDK into the folder (it does so in every config folder
  // naming a plugin, from the npm registry). Both are seeded, as a seat's are, so the test changes
  // nothing of the user's but what setup writes, and never reaches the registry.
  writeFileSync(join(configDir(), ".bash-permission-migrated"), "");
  for (const f of pluginSdkInstalledFiles(configDir(), KILO.pluginSdk)) {
    mkdirSync(dirname(f.path), { recursive: true });
    writeFileSync(f.path, f.content, { mode: f.mode });
  }
  env = cleanEnv({ HOME: home, KILO_DISABLE_MODELS_FETCH: "1", KILO_TELEMETRY_LEVEL: "off" });
}, 120_000);

afterAll(async () => {
  if (home) await rm(home, { recursive: true, force: true });
});

describe("cotal setup --runtime kilo", () => {
  it("--check says what is missing and exits 1, changing nothing", async () => {
    const r = await cotal(["--check"]);
    expect(r.code, r.stdout + r.stderr).toBe(1);
    expect(r.stdout).toMatch(/stale\s+.*kilo\.json/);
    expect(JSON.parse(readFileSync(configFile(), "utf8"))).toEqual(USER);
  });

  it("adds the MCP server and the plugin beside the user's own settings, and Kilo resolves both", async () => {
    const r = await cotal(["--json"]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.json()).toMatchObject({ runtime: "kilo", trusted: 6, files: [{ path: configFile(), action: "updated" }] });
    const doc = JSON.parse(readFileSync(configFile(), "utf8")) as typeof USER & {
      $schema: string;
      mcp: Record<string, { command: string[]; environment: object }>;
      plugin: unknown[];
    };
    expect(doc).toMatchObject({ $schema: "https://app.kilo.ai/config.json", model: USER.model, username: "mine", mcp: { other: USER.mcp.other } });
    expect(doc.mcp.cotal!.command.at(-1)).toMatch(/plugin\/bin\/connector\.mjs$/);
    expect(doc.mcp.cotal!.environment).toEqual({ COTAL_RUNTIME: "kilo" });
    expect(doc.plugin).toHaveLength(1);
    const written = readFileSync(configFile(), "utf8");
    const resolved = await resolvedConfig();
    expect(resolved).toContain("kilo-plugin.mjs");
    expect(resolved).toMatch(/"cotal":\s*\{[^}]*"type":\s*"local"/);
    // The seeded folder was taken as installed: Kilo fetched nothing into it; the file names its
    // `$schema`, so Kilo left it as setup wrote it.
    expect(existsSync(join(configDir(), "node_modules", "@kilocode"))).toBe(false);
    expect(readFileSync(configFile(), "utf8")).toBe(written);
  }, 180_000);

  it("running it again changes nothing, and --check passes", () => expectSetupRerunChangesNothing(cotal, configFile()));
});

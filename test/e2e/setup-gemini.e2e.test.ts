// `cotal setup --runtime gemini` through the shipped CLI: in a user's own
// ~/.gemini/settings.json that already holds their settings and a hook of their own, it adds
// Cotal's MCP server and hooks and keeps everything of theirs; the real gemini reads Cotal's
// server from it (`gemini mcp list`). Running it again changes nothing.
import { spawn } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildCli, cleanEnv, runCotal } from "../harness/cli.js";
import { expectSetupRerunChangesNothing } from "../harness/setup-cases.js";

let home: string;
let env: NodeJS.ProcessEnv;
const MINE = { matcher: "write_file", hooks: [{ type: "command", command: "echo mine" }] };
const USER = { security: { auth: { selectedType: "gemini-api-key" } }, ui: { theme: "Default" }, hooks: { BeforeTool: [MINE] } };
const cotal = (args: string[]) => runCotal(["setup", "--runtime", "gemini", ...args], { cwd: home, env, timeoutMs: 60_000 });
const settingsFile = () => join(home, ".gemini", "settings.json");

/** `gemini mcp list` as the user runs it: the MCP servers Gemini reads from their settings, each started and checked. */
function mcpList(): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(join(process.cwd(), "node_modules", ".bin", "gemini"), ["mcp", "list"], { cwd: home, env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.setEncoding("utf8").on("data", (s: string) => (out += s));
    child.stderr.setEncoding("utf8").on("data", (s: string) => (out += s));
    child.on("error", reject);
    child.on("close", (code) => (code === 0 ? resolve(out) : reject(new Error(`gemini mcp list exited ${code}: ${out.slice(-500)}`))));
  });
}

beforeAll(async () => {
  await buildCli();
  home = await mkdtemp(join(tmpdir(), "cotal-setup-gemini-"));
  mkdirSync(join(home, ".gemini"), { recursive: true });
  writeFileSync(settingsFile(), JSON.stringify(USER, null, 2));
  env = cleanEnv({ HOME: home, GEMINI_API_KEY: "gemini-double-key", GEMINI_CLI_TRUST_WORKSPACE: "true" });
}, 120_000);

afterAll(async () => {
  if (home) await rm(home, { recursive: true, force: true });
});

describe("cotal setup --runtime gemini", () => {
  it("--check says what is stale and exits 1, changing nothing", async () => {
    const r = await cotal(["--check"]);
    expect(r.code, r.stdout + r.stderr).toBe(1);
    expect(r.stdout).toMatch(/stale\s+.*settings\.json/);
    expect(JSON.parse(readFileSync(settingsFile(), "utf8"))).toEqual(USER);
  });

  it("adds the MCP server and the hooks beside the user's own settings, and Gemini reads the server from them", async () => {
    const r = await cotal(["--json"]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.json()).toMatchObject({ runtime: "gemini", trusted: 6, files: [{ path: settingsFile(), action: "updated" }] });
    const doc = JSON.parse(readFileSync(settingsFile(), "utf8")) as typeof USER & {
      mcpServers: Record<string, { args: string[]; env: object; trust: boolean }>;
      hooks: Record<string, Array<{ hooks: Array<{ command: string }> }>>;
    };
    expect(doc).toMatchObject({ security: USER.security, ui: USER.ui });
    expect(doc.mcpServers.cotal!.args.at(-1)).toMatch(/plugin\/bin\/connector\.mjs$/);
    expect(doc.mcpServers.cotal).toMatchObject({ env: { COTAL_RUNTIME: "gemini" }, trust: true });
    expect(doc.hooks.BeforeTool![0]).toEqual(MINE);
    expect(doc.hooks.BeforeAgent![0]!.hooks[0]!.command).toMatch(/hook\.mjs" UserPromptSubmit$/);
    // Gemini reads the entry as its own (whether the connector answered its short probe in time depends on the host's load).
    expect(await mcpList()).toMatch(/cotal: \S+ --optimize-for-size --max-semi-space-size=1 \S+\/plugin\/bin\/connector\.mjs \(stdio\)/);
  }, 180_000);

  it("running it again changes nothing, and --check passes", () => expectSetupRerunChangesNothing(cotal, settingsFile()));
});

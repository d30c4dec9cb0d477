// `cotal setup` from the BUILT CLI, with the pinned real claude CLI, an isolated HOME and Cotal
// home: it installs the plugin so that `claude mcp list` starts our bundled connector and completes
// the MCP handshake, is idempotent, `--check` sees tampering, and it never overwrites user files.
import { execFile } from "node:child_process";
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import pkg from "../../package.json" with { type: "json" };
import { installCommandText, renderMarketplace, renderPlugin } from "../../connector/claude/index.js";
import { parseAgentFile } from "../../runtime/index.js";
import { claudeBin, claudeEnv, OFFLINE_ENV, projectRoot } from "../harness/claude-runner.js";
import { buildCli, runCotal } from "../harness/cli.js";
import { until } from "../../testbed/until.js";

const root = mkdtempSync(path.join(os.tmpdir(), "cotal-setup-"));
const home = path.join(root, "home");
const cotalHome = path.join(root, "cotal-home");
const market = path.join(cotalHome, "marketplace");
const project = path.join(root, "project");
const nodeDir = path.dirname(process.execPath);
const binDir = path.join(projectRoot, "node_modules", ".bin");

/** The environment a user's shell would give `cotal setup`: claude on PATH (unless `withClaude` is false). */
function setupEnv(opts: { withClaude?: boolean; home?: string; cotalHome?: string } = {}): NodeJS.ProcessEnv {
  const withClaude = opts.withClaude ?? true;
  return {
    PATH: [nodeDir, ...(withClaude ? [binDir] : []), "/usr/bin", "/bin"].join(path.delimiter),
    HOME: opts.home ?? home,
    COTAL_HOME: opts.cotalHome ?? cotalHome,
    LANG: "C.UTF-8",
    ...(process.env.TMPDIR ? { TMPDIR: process.env.TMPDIR } : {}),
    ...(process.getuid?.() === 0 ? { IS_SANDBOX: "1" } : {}),
    ...OFFLINE_ENV,
    ...(withClaude ? {} : { COTAL_CLAUDE_BIN: path.join(root, "no-such-claude") }),
  };
}

// `cotal setup` runs the real claude CLI (plugin install, marketplace add) more than once: 30 s
// was not enough on a loaded two-core machine. These bounds only catch a hang; nothing here is timed.
vi.setConfig({ testTimeout: 300_000, hookTimeout: 300_000 });
const COMMAND_MS = 150_000;

const setup = (args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}) =>
  runCotal(["setup", ...args], { cwd: opts.cwd ?? project, env: opts.env ?? setupEnv(), timeoutMs: COMMAND_MS });

/** Run the real claude CLI in the isolated HOME. */
async function claude(args: string[], cwd = project, inHome = home): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await promisify(execFile)(claudeBin(), args, { cwd, env: claudeEnv({ baseUrl: "http://127.0.0.1:9", home: inHome }), timeout: COMMAND_MS });
    return { code: 0, ...r };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === "number" ? e.code : 1, stdout: e.stdout ?? "", stderr: e.stderr ?? "" };
  }
}

/** Pids of live processes whose command line mentions this test's temp folder (connectors started by claude). */
function processesUnderRoot(): number[] {
  return readdirSync("/proc")
    .filter((d) => /^\d+$/.test(d) && Number(d) !== process.pid)
    .filter((d) => {
      try {
        const stat = readFileSync(`/proc/${d}/stat`, "utf8");
        return !/\) [ZX] /.test(stat) && readFileSync(`/proc/${d}/cmdline`, "utf8").includes(root);
      } catch {
        return false;
      }
    })
    .map(Number);
}

function marketplaceSnapshot(): Record<string, number> {
  const out: Record<string, number> = {};
  const walk = (rel: string): void => {
    for (const e of readdirSync(path.join(market, rel), { withFileTypes: true })) {
      const r = path.join(rel, e.name);
      if (e.isDirectory()) walk(r);
      else out[r] = statSync(path.join(market, r)).mtimeMs;
    }
  };
  walk("");
  return out;
}

const USER_SETTINGS = { theme: "dark", permissions: { allow: ["Bash(ls)"] }, env: { MY_VAR: "kept" } };

beforeAll(async () => {
  await buildCli();
  mkdirSync(project, { recursive: true });
  // A user who already has Claude settings: setup must not overwrite them.
  mkdirSync(path.join(home, ".claude"), { recursive: true });
  writeFileSync(path.join(home, ".claude", "settings.json"), JSON.stringify(USER_SETTINGS, null, 2));
});

afterAll(async () => {
  const left = processesUnderRoot();
  for (const pid of left) process.kill(pid, "SIGKILL");
  rmSync(root, { recursive: true, force: true });
  expect(left, "processes (connectors) left running after the tests").toEqual([]);
});

describe("cotal setup --scope user, with the claude CLI on PATH", () => {
  it("writes the marketplace, seeds the agent file and installs the plugin with claude", async () => {
    const r = await setup(["--scope", "user", "--json"]);
    expect(r.code, r.stderr).toBe(0);
    const out = r.json<{
      changed: boolean;
      files: Array<{ path: string; action: string }>;
      agentFile: { path: string; action: string };
      claude: Record<string, unknown>;
    }>();
    expect(out.changed).toBe(true);
    expect(out.files.map((f) => f.path)).toEqual(
      expect.arrayContaining([
        ".claude-plugin/marketplace.json",
        "plugins/cotal/.claude-plugin/plugin.json",
        "plugins/cotal/hooks/hooks.json",
        "plugins/cotal/.mcp.json",
        "plugins/cotal/README.md",
        "plugins/cotal/bin/connector.mjs",
        "plugins/cotal/bin/hook.mjs",
      ]),
    );
    expect(out.files.every((f) => f.action === "created")).toBe(true);
    expect(out.claude).toMatchObject({ bin: path.join(binDir, "claude"), marketplace: "added", plugin: "installed", enabled: true });
    expect(out.agentFile).toEqual({ path: path.join(project, ".cotal", "agents", "default.md"), action: "created" });

    // The bundles are the package's own.
    expect(readFileSync(path.join(market, "plugins/cotal/bin/connector.mjs")).equals(readFileSync(path.join(projectRoot, "dist", "connector.mjs")))).toBe(true);
    // The seeded agent file is valid and has a persona.
    const agent = parseAgentFile(readFileSync(out.agentFile.path, "utf8"), out.agentFile.path);
    expect(agent.frontmatter.name).toBe("default");
    expect(agent.persona).toMatch(/cotal_inbox/);
    // Claude recorded the install; the user's own settings are all still there.
    const settings = JSON.parse(readFileSync(path.join(home, ".claude", "settings.json"), "utf8"));
    expect(settings).toMatchObject(USER_SETTINGS);
    expect(settings.enabledPlugins).toEqual({ "cotal@cotal-local": true });
    const list = await claude(["plugin", "list", "--json"]);
    expect(JSON.parse(list.stdout)).toEqual(
      expect.arrayContaining([expect.objectContaining({ id: "cotal@cotal-local", version: pkg.version, scope: "user", enabled: true })]),
    );
    // The marketplace it wrote passes the CLI's own validation.
    const v = await claude(["plugin", "validate", "--strict", market]);
    expect(v.code, v.stdout + v.stderr).toBe(0);
  });

  it("claude mcp list in that HOME reports the Cotal plugin server connected (our bundled connector, MCP handshake done)", async () => {
    const r = await claude(["mcp", "list"]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const line = r.stdout.split("\n").find((l) => l.startsWith("plugin:cotal:cotal:"));
    expect(line, r.stdout).toBeDefined();
    expect(line).toContain(path.join(market, "plugins", "cotal", "bin", "connector.mjs"));
    expect(line).toContain("--optimize-for-size --max-semi-space-size=1");
    expect(line).toMatch(/✔ Connected/);
    // The connector it started left with the health check.
    await until(
      () => processesUnderRoot().length === 0,
      10_000,
      `the connector started by claude mcp list to exit (still running: ${processesUnderRoot().join(", ")})`,
    );
  });

  it("a second setup changes nothing and says so", async () => {
    const before = marketplaceSnapshot();
    const r = await setup(["--scope", "user"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("files up to date");
    expect(r.stdout).toContain("already installed");
    expect(r.stdout).toContain("exists, kept");
    expect(r.stdout).toMatch(/Nothing changed: the Cotal plugin .* is installed \(user scope\) and up to date\./);
    expect(marketplaceSnapshot()).toEqual(before);
  });

  it("--check passes after the install", async () => {
    const r = await setup(["--check"]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(/OK: the Cotal plugin .* is set up \(user scope\)/);
    expect(r.stdout).toMatch(/plugin cotal@cotal-local \(user scope\): current/);
  });

  it("--check fails after an installed file is tampered with, naming it; setup refreshes it (and removes strays)", async () => {
    const hook = path.join(market, "plugins", "cotal", "bin", "hook.mjs");
    appendFileSync(hook, "\n// tampered\n");
    writeFileSync(path.join(market, "plugins", "cotal", "left-over.txt"), "from an older version");
    const before = marketplaceSnapshot();
    const bad = await setup(["--check"]);
    expect(bad.code).toBe(1);
    expect(bad.stdout).toMatch(/stale +plugins\/cotal\/bin\/hook\.mjs/);
    expect(bad.stdout).toMatch(/extra +plugins\/cotal\/left-over\.txt/);
    expect(bad.stderr).toContain(`stale file ${hook}`);
    expect(marketplaceSnapshot(), "--check changes nothing").toEqual(before);

    const fix = await setup([]);
    expect(fix.code, fix.stderr).toBe(0);
    expect(fix.stdout).toMatch(/updated +plugins\/cotal\/bin\/hook\.mjs/);
    expect(fix.stdout).toMatch(/removed +plugins\/cotal\/left-over\.txt/);
    expect(readFileSync(hook).equals(readFileSync(path.join(projectRoot, "dist", "hook.mjs")))).toBe(true);
    expect((await setup(["--check"])).code).toBe(0);
  });

  it("an existing .cotal/agents/default.md is not overwritten", async () => {
    const other = path.join(root, "custom-project");
    const file = path.join(other, ".cotal", "agents", "default.md");
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, "---\nname: mine\n---\nMy own persona.\n");
    const r = await setup(["--dir", other]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`${file} (exists, kept)`);
    expect(readFileSync(file, "utf8")).toBe("---\nname: mine\n---\nMy own persona.\n");
  });

  it("--scope project records the install for that project only (claude writes its .claude/settings.json)", async () => {
    const proj = path.join(root, "team-project");
    mkdirSync(proj);
    expect((await setup(["--scope", "project", "--check", "--dir", proj])).code).toBe(1);
    const r = await setup(["--scope", "project", "--dir", proj], { cwd: root });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/plugin cotal@cotal-local \(project scope\): installed/);
    expect(JSON.parse(readFileSync(path.join(proj, ".claude", "settings.json"), "utf8"))).toEqual({ enabledPlugins: { "cotal@cotal-local": true } });
    expect((await setup(["--scope", "project", "--check", "--dir", proj])).code).toBe(0);
    expect(existsSync(path.join(proj, ".cotal", "agents", "default.md"))).toBe(true);
  });
});

describe("cotal setup after an upgrade", () => {
  it("refreshes the files of an older version and has claude re-record the new version", async () => {
    const oldHome = path.join(root, "home-upgrade");
    const oldCotal = path.join(root, "cotal-home-upgrade");
    const oldMarket = path.join(oldCotal, "marketplace");
    const proj = path.join(root, "project-upgrade");
    mkdirSync(oldHome);
    mkdirSync(proj);
    // What an older Cotal installed: its render at version 0.0.1, bundles included.
    const old = { version: "0.0.1", license: pkg.license, author: pkg.author };
    const files: Record<string, string> = { ".claude-plugin/marketplace.json": renderMarketplace(old) };
    for (const [rel, text] of Object.entries(renderPlugin(old))) files[`plugins/cotal/${rel}`] = text;
    for (const b of ["connector.mjs", "hook.mjs"]) files[`plugins/cotal/bin/${b}`] = readFileSync(path.join(projectRoot, "dist", b), "utf8");
    for (const [rel, text] of Object.entries(files)) {
      mkdirSync(path.dirname(path.join(oldMarket, rel)), { recursive: true });
      writeFileSync(path.join(oldMarket, rel), text);
    }
    expect((await claude(["plugin", "marketplace", "add", oldMarket], proj, oldHome)).code).toBe(0);
    expect((await claude(["plugin", "install", "cotal@cotal-local", "--scope", "user"], proj, oldHome)).code).toBe(0);

    const env = setupEnv({ home: oldHome, cotalHome: oldCotal });
    const stale = await setup(["--check"], { cwd: proj, env });
    expect(stale.code).toBe(1);
    expect(stale.stderr).toContain("recorded at version 0.0.1");
    const r = await setup([], { cwd: proj, env });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/updated +plugins\/cotal\/\.claude-plugin\/plugin\.json/);
    expect(r.stdout).toContain(`plugin cotal@cotal-local (user scope): updated ${pkg.version}`);
    expect((await setup(["--check"], { cwd: proj, env })).code).toBe(0);
  });
});

describe("cotal setup without a claude CLI", () => {
  it("writes the files and prints the one command to run", async () => {
    const otherHome = path.join(root, "home-without-claude");
    const otherCotal = path.join(root, "cotal-home-without-claude");
    const proj = path.join(root, "project-without-claude");
    mkdirSync(otherHome);
    mkdirSync(proj);
    const env = setupEnv({ withClaude: false, home: otherHome, cotalHome: otherCotal });
    const r = await setup([], { cwd: proj, env });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("claude       not found on PATH");
    const command = installCommandText({ marketplaceDir: path.join(otherCotal, "marketplace"), scope: "user" });
    expect(command).toBe(`claude plugin marketplace add ${path.join(otherCotal, "marketplace")} && claude plugin install cotal@cotal-local --scope user`);
    expect(r.stdout).toContain(`\n  ${command}\n`);
    expect(existsSync(path.join(otherCotal, "marketplace", ".claude-plugin", "marketplace.json"))).toBe(true);
    expect(existsSync(path.join(otherCotal, "marketplace", "plugins", "cotal", "bin", "connector.mjs"))).toBe(true);
    expect(existsSync(path.join(proj, ".cotal", "agents", "default.md"))).toBe(true);
    expect(existsSync(path.join(otherHome, ".claude")), "nothing is written for Claude").toBe(false);
    // --check: the files are fine; the install in Claude cannot be checked.
    const check = await setup(["--check"], { cwd: proj, env });
    expect(check.code, check.stdout + check.stderr).toBe(0);
    expect(check.stdout).toContain("not checked");
  });
});

describe("cotal setup --print-plugin-dir", () => {
  it("prints the package's plugin folder, which holds the manifest and the bundles", async () => {
    const r = await setup(["--print-plugin-dir"], { cwd: root });
    expect(r.code, r.stderr).toBe(0);
    const dir = r.stdout.trim();
    expect(path.isAbsolute(dir)).toBe(true);
    expect(dir).toBe(path.join(projectRoot, "plugin"));
    expect(existsSync(path.join(dir, ".claude-plugin", "plugin.json"))).toBe(true);
    expect(existsSync(path.join(dir, "bin", "connector.mjs"))).toBe(true);
    expect(existsSync(path.join(dir, "bin", "hook.mjs"))).toBe(true);
  });

  it("refuses to be combined with flags it would ignore", async () => {
    const r = await setup(["--print-plugin-dir", "--check"], { cwd: root });
    expect(r.code).toBe(2);
  });
});

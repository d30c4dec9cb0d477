// The committed plugin/ tree is the render of the hook registry and package.json (golden test;
// `npm run plugin:render` rewrites it), and the pinned real CLI validates it without a warning.
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import pkg from "../../package.json" with { type: "json" };
import { HOOKS } from "../../connector/internal.js";
import { PLUGIN_BIN_DIR, renderPlugin } from "../../connector/claude/index.js";
import { claudeBin, OFFLINE_ENV, projectRoot } from "../harness/claude-runner.js";

const pluginDir = path.join(projectRoot, "plugin");
const rendered = renderPlugin();

if (process.env.COTAL_UPDATE_PLUGIN === "1") {
  for (const rel of committedFiles()) if (!(rel in rendered)) rmSync(path.join(pluginDir, rel));
  for (const [rel, text] of Object.entries(rendered)) {
    mkdirSync(path.dirname(path.join(pluginDir, rel)), { recursive: true });
    writeFileSync(path.join(pluginDir, rel), text);
  }
}

/** Files under plugin/ except bin/ (the build's copies of the bundles, not committed). */
function committedFiles(dir = pluginDir, rel = ""): string[] {
  let entries;
  try {
    entries = readdirSync(path.join(dir, rel), { withFileTypes: true });
  } catch {
    return [];
  }
  return entries.flatMap((e) => {
    const r = rel ? `${rel}/${e.name}` : e.name;
    if (e.isDirectory()) return r === PLUGIN_BIN_DIR ? [] : committedFiles(dir, r);
    return [r];
  });
}

const home = mkdtempSync(path.join(os.tmpdir(), "cotal-plugin-validate-"));
afterAll(() => rmSync(home, { recursive: true, force: true }));

describe("the committed plugin matches the hook registry and package.json", () => {
  it("plugin/ holds exactly the rendered files (run `npm run plugin:render` after changing the registry)", () => {
    expect(committedFiles().sort()).toEqual(Object.keys(rendered).sort());
  });

  it.each(Object.keys(rendered))("%s is the current render", (rel) => {
    expect(readFileSync(path.join(pluginDir, rel), "utf8")).toBe(rendered[rel]);
  });

  it("the manifest takes name, version and license from package.json", () => {
    const manifest = JSON.parse(rendered[".claude-plugin/plugin.json"]!);
    expect(manifest).toMatchObject({ name: "cotal", version: pkg.version, license: pkg.license, author: { name: pkg.author } });
    expect(manifest.description.length).toBeGreaterThan(20);
  });

  it("hooks.json has one quoted command hook per registry entry, with its timeout and matcher", () => {
    const { hooks } = JSON.parse(rendered["hooks/hooks.json"]!);
    expect(Object.keys(hooks)).toEqual(HOOKS.map((h) => h.event));
    for (const h of HOOKS) {
      const [group] = hooks[h.event];
      expect(group.matcher).toBe(h.matcher);
      expect(group.hooks).toEqual([{ type: "command", command: `node "\${CLAUDE_PLUGIN_ROOT}/bin/hook.mjs" ${h.event}`, timeout: h.timeoutSec }]);
    }
  });

  it(".mcp.json starts the bundled connector as server cotal with the small-heap flags, telling it it runs in Claude Code", () => {
    expect(JSON.parse(rendered[".mcp.json"]!)).toEqual({
      mcpServers: {
        cotal: {
          command: "node",
          args: ["--optimize-for-size", "--max-semi-space-size=1", "${CLAUDE_PLUGIN_ROOT}/bin/connector.mjs"],
          env: { COTAL_RUNTIME: "claude" },
        },
      },
    });
  });

  it("a registry or version change shows up in the render (the golden test would fail)", () => {
    const other = renderPlugin({ version: "9.9.9", license: pkg.license, author: pkg.author });
    expect(other[".claude-plugin/plugin.json"]).not.toBe(rendered[".claude-plugin/plugin.json"]);
    expect(other["hooks/hooks.json"]).toBe(rendered["hooks/hooks.json"]);
  });
});

interface ValidateReport {
  success: boolean;
  manifest: { errors: unknown[]; warnings: unknown[] };
  contents: Array<{ file: string; errors: unknown[]; warnings: Array<{ message: string }> }>;
  provides: { hooks: Array<{ event: string }>; mcpServers: Array<{ name: string; args: string[] }> };
  directory: { findings: Array<{ code: string; blocking: boolean }> };
}

/** `claude plugin validate --strict --json DIR` (exit 1 on a warning, with the report on stdout). */
async function validate(dir: string): Promise<ValidateReport> {
  const r = await promisify(execFile)(claudeBin(), ["plugin", "validate", "--strict", "--json", dir], {
    cwd: home,
    env: { PATH: `${path.dirname(process.execPath)}:${process.env.PATH ?? "/usr/bin:/bin"}`, HOME: home, ...OFFLINE_ENV },
    timeout: 30_000,
  }).catch((err: { stdout?: string }) => ({ stdout: err.stdout ?? "" }));
  return JSON.parse(r.stdout) as ValidateReport;
}

describe("claude plugin validate (pinned real CLI)", () => {
  it("passes --strict with no errors and no warnings (no unknown events, no unquoted CLAUDE_PLUGIN_ROOT)", async () => {
    const report = await validate(pluginDir);
    expect(report.success).toBe(true);
    expect(report.manifest.errors).toEqual([]);
    expect(report.manifest.warnings).toEqual([]);
    for (const c of report.contents) expect({ file: c.file, errors: c.errors, warnings: c.warnings }).toEqual({ file: c.file, errors: [], warnings: [] });
    expect(report.provides.hooks.map((h) => h.event)).toEqual(HOOKS.map((h) => h.event));
    expect(report.provides.mcpServers.map((s) => s.name)).toEqual(["cotal"]);
    // The catalog's own checks: nothing it would refuse (a README of at least 40 words…).
    expect(report.directory.findings.filter((f) => f.blocking)).toEqual([]);
  });

  it("would catch an unquoted CLAUDE_PLUGIN_ROOT or an unknown event (the check above is not vacuous)", async () => {
    const broken = path.join(home, "broken");
    for (const [rel, text] of Object.entries(rendered)) {
      mkdirSync(path.dirname(path.join(broken, rel)), { recursive: true });
      writeFileSync(path.join(broken, rel), text);
    }
    const hooks = JSON.parse(rendered["hooks/hooks.json"]!);
    hooks.hooks.Stop[0].hooks[0].command = "node ${CLAUDE_PLUGIN_ROOT}/bin/hook.mjs Stop";
    hooks.hooks.SessionBegin = hooks.hooks.SessionStart;
    writeFileSync(path.join(broken, "hooks", "hooks.json"), JSON.stringify(hooks));
    const report = await validate(broken);
    expect(report.success).toBe(false);
    const warnings = report.contents.flatMap((c) => c.warnings.map((w) => w.message)).join("\n");
    expect(warnings).toMatch(/without quotes/);
    expect(warnings).toMatch(/SessionBegin: unknown hook event/);
  });
});

// `cotal doctor` through the built CLI: a verdict and a fix per check, exit 0 only when none
// failed. Every registered runtime's CLI is a stand-in named by its bin variable (so the user's
// own claude or codex, logged in or not, cannot decide the outcome), with provider keys set.
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DoctorReport } from "../../../cli/doctor/check.js";
import { RUNTIMES } from "../../../runtimes/index.js";
import { cleanEnv, cliFolder, freePort, runCotal, type CliResult } from "../../harness/cli.js";

const { dir: project, cotal } = cliFolder("cotal-doctor-");
const scratch = mkdtempSync(join(tmpdir(), "cotal-doctor-tools-"));
const bin = join(scratch, "bin");
const claudeConfig = join(scratch, "claude-config");

/** A stand-in agent CLI: its version, and (claude) empty plugin lists. */
function fakeCli(name: string, version: string): string {
  const file = join(bin, name);
  writeFileSync(file, `#!/bin/sh\ncase "$1" in\n  --version) echo "${version}" ;;\n  plugin) echo "[]" ;;\n  *) exit 2 ;;\nesac\n`, { mode: 0o755 });
  return file;
}

/** The version each stand-in prints. */
const versionOf = (runtime: string) => `${runtime}-cli 9.8.7`;

/** The environment every doctor run here gets: stand-in CLIs with credentials, a Cotal home of its own. */
function env(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const e = cleanEnv({
    ...Object.fromEntries(RUNTIMES.map((r) => [r.binEnv, join(bin, r.command)])),
    ANTHROPIC_API_KEY: "sk-test-not-a-key",
    OPENAI_API_KEY: "sk-test-not-a-key",
    GEMINI_API_KEY: "test-not-a-key",
    COPILOT_GITHUB_TOKEN: "test-not-a-token",
    CLAUDE_CONFIG_DIR: claudeConfig,
    COTAL_HOME: join(scratch, "cotal-home"),
  });
  // undefined: the variable is not set at all.
  for (const [k, v] of Object.entries(extra))
    if (v === undefined) delete e[k];
    else e[k] = v;
  return e;
}

function doctor(cwd: string, extra: Record<string, string | undefined> = {}, ...args: string[]): Promise<CliResult> {
  return runCotal(["doctor", ...args], { cwd, env: env(extra), timeoutMs: 60_000 });
}

function checkOf(r: DoctorReport, id: string) {
  const c = r.checks.find((x) => x.id === id);
  if (!c) throw new Error(`no check ${id} in ${JSON.stringify(r.checks.map((x) => x.id))}`);
  return c;
}

beforeAll(async () => {
  mkdirSync(bin, { recursive: true });
  mkdirSync(claudeConfig, { recursive: true });
  for (const r of RUNTIMES) fakeCli(r.command, versionOf(r.name));
  const up = await cotal("up", "-d", "--port", String(await freePort()));
  expect(up.code, up.stderr).toBe(0);
}, 120_000);

afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe("cotal doctor", () => {
  it("on a healthy mesh every check passes (or is skipped, saying why) and it exits 0", async () => {
    const r = await doctor(project, {}, "--json");
    expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0);
    const report = DoctorReport.parse(r.json());
    expect(report.ok).toBe(true);
    // One check per registered runtime: a new adapter is checked without touching doctor.
    const runtimes = RUNTIMES.map((rt) => `runtime:${rt.name}`);
    expect(runtimes).toContain("runtime:claude");
    expect(report.checks.map((c) => c.id)).toEqual(["nats-server", ...runtimes, "plugin", "modes", "ports", "disk", "mesh", "clock"]);
    for (const id of ["nats-server", ...runtimes, "modes", "ports", "disk", "mesh", "clock"]) expect(checkOf(report, id).verdict, id).toBe("pass");
    expect(checkOf(report, "nats-server").detail).toMatch(/v2\.(1\d|[2-9]\d)\.\d+ \(2\.10 through 2\.15 are supported\)$/);
    for (const rt of RUNTIMES) expect(checkOf(report, `runtime:${rt.name}`).detail).toContain(`${join(bin, rt.command)} ${versionOf(rt.name)}`);
    expect(checkOf(report, "ports").detail).toMatch(/in use by this mesh: client port 127\.0\.0\.1:\d+ \(this mesh's nats-server, pid \d+\)/);
    expect(checkOf(report, "mesh").detail).toMatch(/the mesh service answers \(pid \d+\)/);
    expect(checkOf(report, "clock").detail).toMatch(/this host's clock is .* the server's/);
    // The plugin is not installed in the stand-in claude: worth a warning, not a failure.
    expect(checkOf(report, "plugin")).toMatchObject({ verdict: "warn", fix: expect.stringContaining("cotal setup") });
    for (const c of report.checks.filter((x) => x.verdict === "fail" || x.verdict === "warn")) expect(c.fix, c.id).toBeTruthy();
    expect(report.counts.fail).toBe(0);
    expect(report.counts.pass + report.counts.warn + report.counts.skipped).toBe(report.checks.length);

    const text = await doctor(project);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^ok\s+mesh\s+nats:\/\//m);
    expect(text.stdout).toMatch(new RegExp(`^No problems found: ${6 + RUNTIMES.length} passed, 1 warning, 0 skipped\\.$`, "m"));
  });

  it("a credential file others could read (0644) fails the modes check and names the chmod, exit 1", async () => {
    const creds = join(project, ".cotal", "auth", "creds", "default", "cli.creds");
    chmodSync(creds, 0o644);
    try {
      const r = await doctor(project);
      expect(r.code, r.stdout).toBe(1);
      expect(r.stdout).toMatch(new RegExp(`^FAIL\\s+\\.cotal modes\\s+1 secret other users could read: ${creds.replace(/[.]/g, "\\.")} \\(mode 0644\\)`, "m"));
      expect(r.stdout).toContain(`fix: Run \`chmod 600 ${creds}\``);
      expect(r.stdout).toMatch(/^1 failed|^2 failed/m);
      const report = DoctorReport.parse((await doctor(project, {}, "--json")).json());
      expect(checkOf(report, "modes")).toMatchObject({ verdict: "fail", fix: expect.stringContaining(`chmod 600 ${creds}`) });
      // The connection refuses that file too: the mesh check says so, with the same fix.
      expect(checkOf(report, "mesh")).toMatchObject({ verdict: "fail", fix: expect.stringContaining(`chmod 600 ${creds}`) });
    } finally {
      chmodSync(creds, 0o600);
    }
    expect((await doctor(project)).code).toBe(0);
  });

  it("a nats-server older than 2.10 fails, naming the binary, why and how to get a newer one, exit 1", async () => {
    const old = join(scratch, "old-nats-server");
    writeFileSync(old, '#!/bin/sh\necho "nats-server: v2.9.10"\n', { mode: 0o755 });
    const r = await doctor(project, { NATS_SERVER_BIN: old });
    expect(r.code, r.stdout).toBe(1);
    expect(r.stdout).toMatch(
      new RegExp(`^FAIL\\s+nats-server\\s+nats-server 2\\.10 or newer is required; found only NATS_SERVER_BIN=${old} \\(v2\\.9\\.10\\)`, "m"),
    );
    expect(r.stdout).toMatch(/fix: Get nats-server 2\.10 or newer: .*install-nats-server\.sh.*NATS_SERVER_BIN/);
  });

  it("a nats-server newer than the newest tested is used with a warning naming the supported range, exit 0", async () => {
    const newer = join(scratch, "newer-nats-server");
    writeFileSync(newer, '#!/bin/sh\necho "nats-server: v2.16.0"\n', { mode: 0o755 });
    const r = await doctor(project, { NATS_SERVER_BIN: newer });
    expect(r.code, r.stdout).toBe(0);
    expect(r.stdout).toMatch(
      new RegExp(
        `^warn\\s+nats-server\\s+${newer} v2\\.16\\.0: newer than the newest Cotal is tested on \\(2\\.15\\); it is used, untested \\(2\\.10 through 2\\.15 are supported\\)`,
        "m",
      ),
    );
    expect(r.stdout).toMatch(/fix: Should the mesh misbehave on it, point NATS_SERVER_BIN at a nats-server 2\.10 through 2\.15/);
  });

  it("an agent CLI without credentials here fails with its runtime's own fix, exit 1", async () => {
    const r = await doctor(project, { ANTHROPIC_API_KEY: "" }, "--json");
    expect(r.code, r.stdout).toBe(1);
    const report = DoctorReport.parse(r.json());
    expect(checkOf(report, "runtime:claude")).toMatchObject({
      verdict: "fail",
      // The login file that does not exist is named as missing, never as the credentials found.
      detail: expect.stringMatching(
        /credentials: subscription \(CLAUDE_CONFIG_DIR\)\. It cannot authenticate here: Claude auth subscription needs a Claude login, and \S+ does not exist/,
      ),
      fix: expect.stringContaining("Log in once with `claude`"),
    });
    expect(report.checks.filter((c) => c.verdict === "fail").map((c) => c.id)).toEqual(["runtime:claude"]);
  });

  it("a runtime nobody named that cannot authenticate only warns; named by an agent file, cotal.yaml or --runtime, it fails", async () => {
    const here = mkdtempSync(join(tmpdir(), "cotal-doctor-one-runtime-"));
    try {
      // Only Claude configured: Codex is installed (a stand-in) but has no key.
      const noCodexKey = { OPENAI_API_KEY: undefined };
      const one = await doctor(here, noCodexKey, "--json");
      expect(one.code, one.stdout).toBe(0);
      const report = DoctorReport.parse(one.json());
      expect(checkOf(report, "runtime:codex")).toMatchObject({
        verdict: "warn",
        detail: expect.stringContaining("Not needed here: no agent file, cotal.yaml seat or --runtime names it."),
      });
      // Claude is needed (the default runtime), and a key that is set is said to be present, not working.
      expect(checkOf(report, "runtime:claude")).toMatchObject({
        verdict: "pass",
        detail: expect.stringMatching(/credentials: .*ANTHROPIC_API_KEY.*, present \(not tried: doctor makes no model call.*Needed here: the default runtime/),
      });

      const flagged = DoctorReport.parse((await doctor(here, noCodexKey, "--json", "--runtime", "codex")).json());
      expect(checkOf(flagged, "runtime:codex")).toMatchObject({ verdict: "fail", detail: expect.stringContaining("Needed here: --runtime.") });
      // A variable that is set but empty is no key.
      const emptyKey = DoctorReport.parse((await doctor(here, { OPENAI_API_KEY: "" }, "--json", "--runtime", "codex")).json());
      expect(checkOf(emptyKey, "runtime:codex")).toMatchObject({
        verdict: "fail",
        detail: expect.stringContaining("It cannot authenticate here: Codex has no credentials"),
      });

      mkdirSync(join(here, ".cotal", "agents"), { recursive: true });
      writeFileSync(join(here, ".cotal", "agents", "coder.md"), "---\nname: coder\nruntime: codex\n---\nYou write code.\n");
      const byAgentFile = await doctor(here, noCodexKey);
      expect(byAgentFile.code, byAgentFile.stdout).toBe(1);
      expect(byAgentFile.stdout).toMatch(/^FAIL\s+codex\s.*Needed here: \.cotal\/agents\/coder\.md\.$/m);
      rmSync(join(here, ".cotal"), { recursive: true });

      writeFileSync(join(here, "cotal.yaml"), "seats:\n  g: { agent: codex }\n  e: { agent: echo }\n");
      const byTeamFile = DoctorReport.parse((await doctor(here, noCodexKey, "--json")).json());
      expect(byTeamFile.ok).toBe(false);
      expect(checkOf(byTeamFile, "runtime:codex")).toMatchObject({ verdict: "fail", detail: expect.stringContaining("Needed here: cotal.yaml seats.g.") });
      // Claude is no longer needed once the file names what runs; it still passes (it is configured).
      expect(checkOf(byTeamFile, "runtime:claude").detail).not.toContain("Needed here");

      const bad = await doctor(here, {}, "--runtime", "codx");
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain("--runtime takes runtimes of claude, codex");
    } finally {
      rmSync(here, { recursive: true, force: true });
    }
  });

  it("every runtime's fix for missing credentials names the command that restarts the manager", async () => {
    const bare = env({ HOME: join(scratch, "home-bare") });
    for (const key of ["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "COPILOT_GITHUB_TOKEN"]) delete bare[key];
    const report = DoctorReport.parse(
      (await runCotal(["doctor", "--json", "--runtime", RUNTIMES.map((r) => r.name).join(",")], { cwd: project, env: bare, timeoutMs: 60_000 })).json(),
    );
    for (const r of RUNTIMES) {
      expect(checkOf(report, `runtime:${r.name}`)).toMatchObject({
        verdict: "fail",
        fix: expect.stringContaining("then `cotal down && cotal up -d` from that shell"),
      });
    }
  });

  it("in a folder without a mesh, the checks that need one are skipped, saying why", async () => {
    const empty = mkdtempSync(join(tmpdir(), "cotal-doctor-empty-"));
    try {
      const r = await doctor(empty, {}, "--json");
      const report = DoctorReport.parse(r.json());
      for (const id of ["modes", "disk", "mesh", "clock"])
        expect(checkOf(report, id), id).toMatchObject({ verdict: "skipped", detail: expect.stringContaining("no mesh here") });
      // Port 4222 free, or taken (`cotal up` would then choose another): never a failure.
      expect(["pass", "warn"]).toContain(checkOf(report, "ports").verdict);
      expect(r.code).toBe(report.ok ? 0 : 1);
      expect(report.ok).toBe(true);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });
});

// The runtime contract: the same cases over every runtime the registry seats (docs/runtimes.md,
// "Adding a runtime"), so the next adapter's author learns from a failing case what they missed.
// What is particular to one runtime (its rule syntax, its hooks' names, its output's shape) stays
// in its own suite (test/<runtime>/); this holds what every adapter promises alike:
//
// - its identity: a name that is a plain token, an executable variable `COTAL_<NAME>_BIN`;
// - launch material: a run's prompt on stdin and never in argv, a persona never in argv, every
//   private file 0600 inside the launch's private directory, the posture named;
// - the environment allow-list: an unrelated secret, Cotal's own launch variables and another
//   agent's session markers stay out of a run; a seat gets its launch material;
// - the kernel's refusals before an adapter builds anything, from the capability flags: an empty
//   prompt, a JSON schema where `jsonSchema` is false (a carried session where `carry` is false is
//   the manager's, as it admits a spawn: test/manager);
// - screen classification and run parsing on what every CLI can show or print (nothing, a timeout,
//   a kill);
// - `cotal setup --runtime <name>` into a user's own configuration: `check` writes nothing, setup
//   writes, and again changes nothing.
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { findRuntimeCli } from "../../manager/index.js";
import { RUNTIMES, runtimeNamed } from "../../runtimes/index.js";
import { executeRun, type RunSpec } from "../../manager/internal.js";
import { logger } from "../../broker/index.js";
import type { RunExit, RunLaunchInput, RuntimeAdapter, RuntimeHost, RuntimeLaunch } from "../../runtime/index.js";

const root = mkdtempSync(join(tmpdir(), "cotal-runtime-contract-"));
const log = logger("runtime-contract");
afterAll(() => rmSync(root, { recursive: true, force: true }));

const PROMPT = "CONTRACT-PROMPT-TEXT";
const PERSONA = "CONTRACT-PERSONA-TEXT";
const SECRET = "contract-unrelated-secret";

function hostOf(adapter: RuntimeAdapter, home: string): RuntimeHost {
  const parentEnv = {
    HOME: home,
    PATH: process.env.PATH,
    // What a user's shell holds beside the runtime's own: none of it may reach the CLI.
    UNRELATED_SECRET: SECRET,
    COTAL_LAUNCH_MATERIAL: "/elsewhere/launch.json",
    CLAUDECODE: "1",
    // Enough credentials that no pre-flight stands in the way (each adapter reads its own).
    ANTHROPIC_API_KEY: "sk-contract",
    OPENAI_API_KEY: "sk-contract",
    GEMINI_API_KEY: "contract",
  };
  return {
    executable: findRuntimeCli(adapter, process.env).path ?? `/usr/bin/${adapter.command}`,
    connectorEntry: join(process.cwd(), "dist", "connector.mjs"),
    parentEnv,
    settings: { authMode: "api-key", pluginDir: join(process.cwd(), "plugin") },
  };
}

const runInput = (dir: string): RunLaunchInput => ({
  runId: "c1",
  space: "team",
  prompt: PROMPT,
  cwd: dir,
  persona: PERSONA,
  launchOptions: {},
  allowedTools: [],
  runtimeDir: dir,
});

const seatInput = (dir: string) => ({
  name: "bob",
  space: "team",
  cwd: dir,
  seatDir: dir,
  launchMaterialPath: join(dir, "launch.json"),
  persona: PERSONA,
  launchOptions: {},
  allowedTools: [],
});

function materialIsPrivate(l: RuntimeLaunch): void {
  expect(l.args.join(" ")).not.toContain(PROMPT);
  expect(l.args.join(" ")).not.toContain(PERSONA);
  expect(l.permissionMode, "the posture, named for ps").toEqual(expect.any(String));
  for (const f of l.files) {
    expect(f.mode, f.path).toBe(0o600);
    expect(f.path.startsWith(`${l.privateDir}/`), f.path).toBe(true);
  }
  expect(l.env.UNRELATED_SECRET).toBeUndefined();
  expect(l.env.CLAUDECODE).toBeUndefined();
  expect(Object.values(l.env).join("\n")).not.toContain(SECRET);
}

const exit = (o: Partial<RunExit>): RunExit => ({ code: 0, signal: null, timedOut: false, stdout: "", stderr: "", latencyMs: 5, ...o });
const spec = { runId: "c1", persona: "coder", modelSource: "default" as const, timeoutMs: 60_000 };

it("the registry names each runtime once, by a plain token, and finds each by its name", () => {
  expect(RUNTIMES.length).toBeGreaterThanOrEqual(6);
  expect(new Set(RUNTIMES.map((r) => r.name)).size).toBe(RUNTIMES.length);
  for (const r of RUNTIMES) {
    expect(r.name).toMatch(/^[a-z][a-z0-9-]*$/);
    expect(r.binEnv).toBe(`COTAL_${r.name.toUpperCase()}_BIN`);
    expect(runtimeNamed(r.name)).toBe(r);
  }
});

describe.each(RUNTIMES.map((r) => [r.name, r] as const))("%s", (name, adapter) => {
  const dir = join(root, name);
  const home = join(dir, "home");
  mkdirSync(home, { recursive: true });
  const host = hostOf(adapter, home);

  it("a run's launch: the prompt on stdin, never argv; the persona never in argv; private files 0600; an allow-listed environment", async () => {
    const l = await adapter.buildRun(host, runInput(dir));
    try {
      materialIsPrivate(l);
      expect(l.stdin ?? "").toContain(PROMPT);
      expect(l.env.COTAL_LAUNCH_MATERIAL, "a run has no seat's launch material").toBeUndefined();
    } finally {
      rmSync(l.privateDir, { recursive: true, force: true });
    }
  }, 60_000);

  it("a seat's launch: its launch material reaches the CLI's connector; the persona never in argv; private files 0600", async () => {
    const s = seatInput(dir);
    const l = await adapter.buildSeat(host, s);
    try {
      materialIsPrivate(l);
      const said = `${JSON.stringify(l.env)}\n${l.files.map((f) => f.content).join("\n")}`;
      expect(said).toContain(s.launchMaterialPath);
    } finally {
      rmSync(l.privateDir, { recursive: true, force: true });
    }
  }, 60_000);

  it("the kernel refuses, before the adapter builds anything, what its capability flags say it cannot do", async () => {
    let built = 0;
    const counting: RuntimeAdapter = {
      ...adapter,
      buildRun: (h, i) => {
        built++;
        return adapter.buildRun(h, i);
      },
    };
    const run = (o: Partial<RunSpec>) =>
      executeRun(
        counting,
        host,
        { runId: "c2", space: "team", prompt: PROMPT, timeoutMs: 60_000, modelSource: "default", cwd: dir, runtimeDir: dir, ...o },
        log,
      );
    expect(await run({ prompt: "  " })).toMatchObject({ status: "error", error: { message: expect.stringContaining("needs a prompt") } });
    if (!adapter.capabilities.jsonSchema)
      expect(await run({ jsonSchema: { type: "object" } })).toMatchObject({
        status: "error",
        error: { message: expect.stringContaining("cannot be held to a JSON schema") },
      });
    expect(built, "the adapter was never asked to build").toBe(0);
    // Nothing was left behind by a refusal.
    expect(readdirSync(dir).filter((f) => f.startsWith("cotal-") || f.startsWith("schema-"))).toEqual([]);
  }, 60_000);

  it("reads an empty screen as not ready and no auth failure", () => {
    expect(adapter.classifyScreen("")).toEqual({ kind: "unknown" });
    expect(adapter.authFailureOnScreen("")).toBeUndefined();
    expect(adapter.wakePrompt.trim()).not.toBe("");
  });

  it("maps a run killed for its timeout, a killed run and a run that printed nothing to typed errors", () => {
    expect(adapter.parseRun(spec, exit({ timedOut: true, signal: "SIGKILL", code: null }))).toMatchObject({ status: "timeout", error: { kind: "timeout" } });
    expect(adapter.parseRun(spec, exit({ signal: "SIGTERM", code: null }))).toMatchObject({ status: "error", error: { kind: "killed" } });
    const silent = adapter.parseRun(spec, exit({ code: 1, stderr: "it broke" }));
    expect(silent.status).toBe("error");
    expect(silent).toMatchObject({ runId: "c1", persona: "coder", permissionDenials: [] });
  });

  it("carries into a background manager only what the user's shell holds", () => {
    const env = { HOME: home, SOME_VAR: "x" };
    const carried = adapter.shellEnv?.(env) ?? {};
    for (const [k, v] of Object.entries(carried)) expect(env[k as keyof typeof env], k).toBe(v);
  });

  it.runIf(adapter.setup !== undefined)(
    "`cotal setup --runtime` into the user's own configuration: check writes nothing, setup writes, again changes nothing",
    async () => {
      const user = join(dir, "setup-home");
      mkdirSync(user, { recursive: true });
      const o = { env: { HOME: user, PATH: process.env.PATH }, connectorEntry: join(process.cwd(), "dist", "connector.mjs") };
      const checked = await adapter.setup!({ ...o, check: true });
      expect(checked.files.every((f) => f.action === "missing")).toBe(true);
      expect(readdirSync(user)).toEqual([]);
      const done = await adapter.setup!({ ...o, check: false });
      expect(done.files.every((f) => f.action === "created")).toBe(true);
      const again = await adapter.setup!({ ...o, check: true });
      expect(again.files.every((f) => f.action === "ok")).toBe(true);
    },
    60_000,
  );
});

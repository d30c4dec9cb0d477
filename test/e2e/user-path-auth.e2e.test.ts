// The user's path to Claude runs and seats, through the shipped CLI only:
// `cotal up -d` in a shell whose environment holds the model double's ANTHROPIC_BASE_URL and an
// ANTHROPIC_API_KEY, in a fresh folder. Then `cotal run` returns ok with the model's output, cost
// and session id; a Claude seat spawned with `cotal spawn -d` joins and reaches the model; `cotal
// status` says the auth mode (never the key, which is in no argv and no log either); a run past its
// timeout leaves no process. A manager started with no credentials at all refuses a spawn and a
// run before anything starts, naming the fix; a seat whose key the model refuses shows `auth` in
// spawn's outcome and in ps. The double is served from this process: every CLI call is async.
import { readdirSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunReply } from "../../schemas/index.js";
import { DUMMY_API_KEY } from "../harness/claude-runner.js";
import { pidAlive, type CliResult } from "../harness/cli.js";
import { lastUserText, type ModelDouble, newTurnText } from "../../testbed/model-double.js";
import { ok, UserPath } from "../harness/user-path.js";

const BAD_KEY = "sk-ant-api03-cotal-refused-by-the-double-000000000000";
const MODEL = "claude-sonnet-4-5";

let u: UserPath;
let project: string;
let double: ModelDouble;

/** `cotal <args>` in the project folder, from the user's shell. */
const cotal = (args: string[], env?: NodeJS.ProcessEnv) => u.cotal(args, env);
/** The shell a user runs `claude` in, with a HOME of its own. */
const userShell = (home: string, over?: Record<string, string>) => u.userShell(home, over);

/** Claude processes working in `cwd` (by /proc cwd). */
function claudeIn(cwd: string): number[] {
  const out: number[] = [];
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      // The executable or its script (not an argument: the manager's own `--claude-auth`).
      if (
        !readFileSync(`/proc/${d}/cmdline`, "utf8")
          .split("\0")
          .slice(0, 2)
          .some((a) => /claude/.test(a))
      )
        continue;
      if (realpathSync(`/proc/${d}/cwd`) === realpathSync(cwd) && pidAlive(Number(d))) out.push(Number(d));
    } catch {
      /* gone meanwhile */
    }
  }
  return out;
}

beforeAll(async () => {
  u = await UserPath.start({
    prefix: "cotal-user-auth-",
    agents: { reviewer: { fields: { name: "reviewer", model: MODEL }, body: "You review diffs." } },
    double: { rejectKeys: [BAD_KEY] },
  });
  ({ project, double } = u);
}, 120_000);

afterAll(async () => {
  await u?.close();
});

describe("cotal up from a shell with an API key: runs and seats authenticate the same way", () => {
  it("cotal status says the manager's Claude auth (api-key, detected, the double's URL); the key is in no argv and no log", async () => {
    const status = ok(await cotal(["status"]));
    expect(status.stdout).toContain(`Claude auth:  api-key (detected: ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL; base URL ${double.url})`);
    const json = ok(await cotal(["status", "--json"])).json<{
      managers: Array<{ runtimes?: Array<{ name: string; ready: boolean; auth?: Record<string, unknown> }> }>;
    }>();
    const claude = json.managers[0]?.runtimes?.find((r) => r.name === "claude");
    expect(claude).toMatchObject({ ready: true, auth: { mode: "api-key", chosen: "auto", baseUrl: double.url } });
    expect(status.stdout + JSON.stringify(json)).not.toContain(DUMMY_API_KEY);
    const pid = JSON.parse(readFileSync(join(project, ".cotal", "run", "manager.json"), "utf8")).pid as number;
    expect(readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0")).toEqual(expect.arrayContaining(["--claude-auth", "auto"]));
    expect(readFileSync(`/proc/${pid}/cmdline`, "utf8")).not.toContain(DUMMY_API_KEY);
    // The key reaches the manager through its environment only.
    expect(readFileSync(`/proc/${pid}/environ`, "utf8").split("\0")).toContain(`ANTHROPIC_API_KEY=${DUMMY_API_KEY}`);
    for (const log of readdirSync(join(project, ".cotal", "logs")))
      expect(readFileSync(join(project, ".cotal", "logs", log), "utf8"), log).not.toContain(DUMMY_API_KEY);
  }, 60_000);

  it("cotal run <persona> --prompt … --json returns ok with the model's output, the cost and the session id", async () => {
    double.push({ when: (r) => lastUserText(r).includes("RUN-VIA-UP"), reply: ["looks good to me"] });
    const r = await cotal(["run", "reviewer", "--prompt", "RUN-VIA-UP review this", "--json"]);
    const reply = r.json<RunReply>();
    expect(reply.results[0], r.stdout).toMatchObject({ status: "ok", output: "looks good to me", persona: "reviewer", model: MODEL });
    expect(r.code).toBe(0);
    expect(reply.results[0]!.costUsd).toBeGreaterThan(0);
    expect(reply.results[0]!.sessionId).toMatch(/^[0-9a-f-]{36}$/);
  }, 120_000);

  it("a run past its timeout returns timeout and leaves no process behind", async () => {
    double.push({ when: (r) => lastUserText(r).includes("RUN-SLOW"), reply: ["too late"], delayMs: 120_000 });
    const seen = new Set<number>();
    const watching = setInterval(() => claudeIn(project).forEach((p) => seen.add(p)), 100);
    let r: CliResult;
    try {
      r = await cotal(["run", "reviewer", "--prompt", "RUN-SLOW please", "--timeout", "4s", "--json"]);
    } finally {
      clearInterval(watching);
    }
    expect(r.code).toBe(1);
    expect(r.json<RunReply>().results[0]).toMatchObject({ status: "timeout", error: { kind: "timeout" } });
    expect(seen.size, "the run's claude was seen while it ran").toBeGreaterThan(0);
    for (const pid of seen) expect(pidAlive(pid), `pid ${pid} still runs`).toBe(false);
  }, 60_000);

  it("a Claude seat spawned with cotal spawn -d from an agent file joins, and its first turn reaches the model", async () => {
    double.push({ when: (r) => newTurnText(r).includes("SEAT-HELLO"), reply: ["hello from the seat"] });
    const r = await cotal(["spawn", "-d", "reviewer", "--prompt", "SEAT-HELLO there", "--wait-ms", "90000", "--json"]);
    expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0);
    expect(r.json()).toMatchObject({ name: "reviewer", outcome: "started", seat: { state: "joined", presence: { status: "idle" } } });
    expect(double.mainRequests.some((q) => newTurnText(q).includes("SEAT-HELLO"))).toBe(true);
    const ps = ok(await cotal(["ps"]));
    expect(ps.stdout).toMatch(/reviewer\s+claude\s+joined\s/);
    ok(await cotal(["stop", "--name", "reviewer"]));
  }, 150_000);
});

describe("a Claude seat that cannot reach its model does not report success", () => {
  it("with no credentials at all (no key, no login), spawn and run are refused before anything starts, naming the fix; status says so", async () => {
    const bare = userShell(join(project, "home-bare"));
    delete bare.ANTHROPIC_API_KEY;
    await u.startManager("bare", bare);
    const spawn = await cotal(["spawn", "-d", "reviewer", "--on", "bare", "--name", "nobody"]);
    expect(spawn.code, spawn.stdout).not.toBe(0);
    expect(spawn.stdout).not.toMatch(/started/);
    expect(spawn.stderr).toMatch(/cannot start a Claude seat that reaches its model: Claude auth subscription needs a Claude login/);
    expect(spawn.stderr).toMatch(/claude`? \(\/login\)|ANTHROPIC_API_KEY/);
    const ps = await cotal(["ps", "--on", "bare", "--all", "--json"]);
    expect(ps.stdout, "nothing was claimed").not.toContain("nobody");
    const run = await cotal(["run", "reviewer", "--prompt", "x", "--on", "bare"]);
    expect(run.code).not.toBe(0);
    expect(run.stderr).toMatch(/cannot start a Claude run that reaches its model/);
    const status = ok(await cotal(["status"]));
    // A login that does not exist is not shown as what was detected; the problem names it as missing.
    expect(status.stdout).toMatch(
      /Claude auth: {2}bare: subscription \(detected\), NOT READY: Claude auth subscription needs a Claude login, and \S*\.credentials\.json does not exist/,
    );
  }, 90_000);

  it("a seat whose key the model refuses shows auth in spawn's outcome (exit 1) and in ps", async () => {
    await u.startManager("badkey", userShell(join(project, "home-bad"), { ANTHROPIC_API_KEY: BAD_KEY }));
    const r = await cotal(["spawn", "-d", "reviewer", "--on", "badkey", "--name", "locked", "--prompt", "hello?", "--wait-ms", "60000"]);
    expect(r.code, r.stdout).toBe(1);
    expect(r.stdout).toMatch(/^locked on badkey: joined, but its first turn failed \(auth: 401 invalid x-api-key/m);
    const ps = ok(await cotal(["ps", "--on", "badkey"]));
    expect(ps.stdout).toMatch(/locked\s+claude\s+joined \(auth\)/);
  }, 150_000);

  it("a seat whose CLI says it cannot reach its model, then blanks its screen, fails naming what the CLI said and the fix: in spawn's outcome, ps and the manager's log", async () => {
    // A stand-in for the CLI on this manager: a failed lookup of its vendor's host, then a cleared
    // screen while it goes on waiting (a screen no classifier knows: only what it said tells why).
    const fake = join(project, "unreachable-claude.sh");
    writeFileSync(
      fake,
      [
        "#!/bin/sh",
        'case "$1" in --version) echo "2.1.332 (Claude Code)"; exit 0;; esac',
        "echo 'Connecting to api.anthropic.com'",
        "echo 'Error: getaddrinfo ENOTFOUND api.anthropic.com'",
        "sleep 3",
        "printf '\\033[H\\033[2J'",
        "exec sleep 300",
        "",
      ].join("\n"),
      { mode: 0o755 },
    );
    const manager = await u.startManager("nonet", userShell(join(project, "home-nonet"), { COTAL_CLAUDE_BIN: fake }));
    const r = await cotal(["spawn", "-d", "--agent", "claude", "--on", "nonet", "--name", "offline", "--wait-ms", "60000"]);
    expect(r.code, r.stdout).toBe(1);
    expect(r.stdout).not.toContain("failed: failed:");
    expect(r.stdout).toMatch(
      /^offline on nonet: failed: the seat stopped on an unexpected screen, now blank \(it showed: Connecting to api\.anthropic\.com \/ Error: getaddrinfo ENOTFOUND/m,
    );
    expect(r.stdout).toContain("Claude could not reach its model");
    expect(r.stdout).toContain("ENOTFOUND");
    const all = ok(await cotal(["ps", "--on", "nonet", "--all", "--json"])).json() as Array<{
      seats: Array<{ name: string; exit?: { output?: string }; reason?: string }>;
    }>;
    const seat = all.flatMap((m) => m.seats).find((v) => v.name === "offline");
    expect(seat?.exit?.output).toContain("ENOTFOUND");
    expect(seat?.reason).toContain("could not reach its model");
    const failed = manager.stderr.split("\n").find((l) => l.includes("a seat did not reach its input screen"));
    expect(failed).toContain("ENOTFOUND");
  }, 150_000);
});

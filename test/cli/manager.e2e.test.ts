// The manager through the shipped CLI, as an operator uses it on a secure (static) mesh:
// `cotal up --detach` (which starts the host's manager), more managers with `cotal manager`,
// `cotal spawn -d --agent echo`, `cotal ps`, `cotal status`,
// a DM answered by the seat, `cotal stop`; a second manager routes by --on; a manager that stops
// answering is reported by ps (exit 1); an agent's credential may not spawn (exit 5).
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildCli, cleanEnv, CotalProcess, freePort, runCotal, type CliResult } from "../harness/cli.js";
import { until } from "../../testbed/until.js";

let project: string;
const managers: CotalProcess[] = [];
const cotal = (...args: string[]) => runCotal(args, { cwd: project, timeoutMs: 60_000 });

function ok(r: CliResult): CliResult {
  expect(r.code, `exit code; stdout: ${r.stdout}\nstderr: ${r.stderr}`).toBe(0);
  return r;
}

interface PsJson {
  instance: string;
  seats?: Array<{ name: string; state: string; agent: string; pid?: number }>;
  error?: string;
}

function startManager(instance: string): CotalProcess {
  const stateDir = join(project, `state-${instance}`);
  mkdirSync(stateDir, { recursive: true });
  const m = CotalProcess.spawn(["manager", "--instance", instance, "--state-dir", stateDir, "--stop-seats"], {
    cwd: project,
    env: cleanEnv({ COTAL_LOG_LEVEL: "warn" }),
  });
  managers.push(m);
  return m;
}

async function ps(...extra: string[]): Promise<PsJson[]> {
  const r = await cotal("ps", "--json", ...extra);
  return JSON.parse(r.stdout) as PsJson[];
}

beforeAll(async () => {
  await buildCli();
  project = await mkdtemp(join(tmpdir(), "cotal-mgr-cli-"));
  ok(await cotal("up", "--detach", "--port", String(await freePort())));
}, 120_000);

afterAll(async () => {
  for (const m of managers) await m.stop("SIGTERM", 20_000).catch(() => undefined);
  if (existsSync(join(project, ".cotal", "mesh.json"))) await cotal("down").catch(() => undefined);
  await rm(project, { recursive: true, force: true });
});

describe("cotal manager, spawn, ps, stop", () => {
  it("cotal up started the host's manager: status and ps list it, and an unpinned spawn can use it", async () => {
    const status = ok(await cotal("status"));
    expect(status.stdout).toMatch(/processes: .*manager pid \d+ running/);
    // It runs on a manager credential of its own (named like its instance), not the operator's.
    const pid = (JSON.parse(readFileSync(join(project, ".cotal", "run", "manager.json"), "utf8")) as { pid: number }).pid;
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
    expect(cmdline[cmdline.indexOf("--creds") + 1]).toBe(join(project, ".cotal", "manager", "manager.creds"));
    expect(status.stdout).toMatch(/managers: +\S+ on /);
    const r = ok(await cotal("spawn", "-d", "--agent", "echo", "--name", "first", "--json"));
    expect(r.json()).toMatchObject({ name: "first", outcome: "started" });
    ok(await cotal("stop", "--name", "first"));
  }, 60_000);

  it("--terminal names the seat's terminal host; --runtime, its old name, still works and says so", async () => {
    const now = ok(await cotal("spawn", "-d", "--agent", "echo", "--name", "term_new", "--terminal", "process", "--json"));
    expect(now.json()).toMatchObject({ outcome: "started", seat: { terminal: "process" } });
    expect(now.stderr).not.toContain("old name");
    const old = ok(await cotal("spawn", "-d", "--agent", "echo", "--name", "term_old", "--runtime", "process", "--json"));
    expect(old.json()).toMatchObject({ outcome: "started", seat: { terminal: "process" } });
    expect(old.stderr).toContain("--runtime is the old name of --terminal");
    const both = await cotal("spawn", "-d", "--agent", "echo", "--name", "term_both", "--terminal", "process", "--runtime", "tmux");
    expect(both.code).toBe(2);
    expect(both.stderr).toContain("--runtime is the old name of --terminal, and the two differ (tmux, process)");
    const boxed = await cotal("spawn", "-d", "--agent", "echo", "--name", "term_tmux", "--terminal", "tmux");
    expect(boxed.code).not.toBe(0);
    expect(boxed.stderr).toContain("The echo agent runs headless (terminal process), not tmux; nothing was started.");
    expect(boxed.stderr).toContain("--terminal process");
    for (const name of ["term_new", "term_old"]) ok(await cotal("stop", "--name", name));
  }, 60_000);

  it("cotal up keeps a host manager that is only slow to answer, and its seats: it is not restarted", async () => {
    const pid = (JSON.parse(readFileSync(join(project, ".cotal", "run", "manager.json"), "utf8")) as { pid: number }).pid;
    ok(await cotal("spawn", "-d", "--agent", "echo", "--name", "keeper"));
    // Stopped for 3 s, as a manager on a loaded machine answers late: `cotal up`'s first ask (1 s)
    // goes unanswered. Restarting it would stop the seats it runs (it runs with --stop-seats).
    process.kill(pid, "SIGSTOP");
    const resume = setTimeout(() => process.kill(pid, "SIGCONT"), 3_000);
    let up: CliResult;
    try {
      up = ok(await cotal("up", "--detach", "--json"));
    } finally {
      clearTimeout(resume);
      process.kill(pid, "SIGCONT");
    }
    expect(up.json()).toMatchObject({ manager: { state: "running", pid } });
    expect((await ps()).flatMap((m) => m.seats ?? []).find((v) => v.name === "keeper")).toMatchObject({ state: "joined" });
    ok(await cotal("stop", "--name", "keeper"));
  }, 60_000);

  it("spawns an echo seat that answers a DM, lists it, and stops it", async () => {
    startManager("hostA");
    await until(async () => (await ps()).some((m) => m.instance === "hostA"), 20_000, "manager hostA to be listed by ps");

    const spawned = ok(await cotal("spawn", "-d", "--agent", "echo", "--name", "parrot", "--on", "hostA", "--json"));
    expect(spawned.json()).toMatchObject({ name: "parrot", instance: "hostA", outcome: "started" });
    const listed = (await ps()).find((m) => m.instance === "hostA");
    expect(listed?.seats).toEqual([expect.objectContaining({ name: "parrot", state: "joined", agent: "echo" })]);
    // The seat runs its own small bundle, not the whole CLI, so seats cost little.
    const seatArgv = readFileSync(`/proc/${listed!.seats![0]!.pid!}/cmdline`, "utf8").split("\0");
    expect(seatArgv.some((a) => a.endsWith("/dist/echo-seat.mjs"))).toBe(true);
    expect(seatArgv).not.toContain("agent");
    const table = ok(await cotal("ps"));
    expect(table.stdout).toMatch(/hostA\s+parrot\s+echo\s+joined/);

    // The operator speaks as carol (impersonating, as the README shows) and hears the echo.
    const listen = CotalProcess.spawn(["listen", "--as", "carol", "--impersonate", "--json"], { cwd: project, env: cleanEnv() });
    try {
      await listen.waitForJson((l: { type?: string }) => l.type === "ready", 20_000, "listen ready");
      ok(await cotal("send", "dm", "parrot", "polly?", "--as", "carol", "--impersonate"));
      await listen.waitForJson((l: { type?: string; text?: string }) => l.type === "message" && l.text === "echo: polly?", 20_000, "the echo reply");
    } finally {
      await listen.stop();
    }

    const stopped = ok(await cotal("stop", "--name", "parrot"));
    expect(stopped.stdout).toMatch(/parrot: stopped, retired, 1 credential revoked/);
    expect((await ps()).find((m) => m.instance === "hostA")?.seats).toEqual([]);
  }, 120_000);

  it("routes by --on, reports a manager that stops answering, and refuses bad input with exit 2", async () => {
    const b = startManager("hostB");
    await until(async () => (await ps()).some((m) => m.instance === "hostB"), 20_000, "manager hostB to be listed");
    const r = ok(await cotal("spawn", "-d", "--agent", "echo", "--name", "pinned", "--on", "hostB", "--json"));
    expect(r.json()).toMatchObject({ instance: "hostB", outcome: "started" });

    // Frozen, not gone: its heartbeat is still current, but it answers nothing.
    b.child.kill("SIGSTOP");
    try {
      const res = await cotal("ps");
      expect(res.code).toBe(1);
      expect(res.stdout).toMatch(/hostB\s.*manager did not answer/);
    } finally {
      b.child.kill("SIGCONT");
    }
    expect((await cotal("spawn", "-d", "--agent", "echo", "--name", "bad.name")).code).toBe(2);
    expect((await cotal("spawn", "--agent", "echo")).code).toBe(2); // echo seats only run detached
    ok(await cotal("stop", "--name", "pinned"));
  }, 120_000);

  it("a SIGKILLed manager, started again, rebuilds ps from the seat log and re-adopts its running seat", async () => {
    const first = startManager("hostC");
    await until(async () => (await ps()).some((m) => m.instance === "hostC"), 20_000, "manager hostC to be listed");
    ok(await cotal("spawn", "-d", "--agent", "echo", "--name", "stayer", "--on", "hostC"));
    const before = (await ps("--on", "hostC"))[0]?.seats?.find((v) => v.name === "stayer");
    expect(before).toMatchObject({ state: "joined" });
    first.child.kill("SIGKILL");
    await first.exited;
    startManager("hostC");
    await until(async () => !(await ps("--on", "hostC"))[0]?.error, 20_000, "the restarted hostC to answer");
    const after = (await ps("--on", "hostC"))[0]?.seats?.find((v) => v.name === "stayer");
    expect(after).toMatchObject({ state: "joined", pid: before!.pid });
    ok(await cotal("stop", "--name", "stayer"));
  }, 120_000);

  it("a manager on another host: minted with --profile manager, it runs with only that credential and its seats work", async () => {
    ok(await cotal("mint", "hostr", "--profile", "manager", "--out", join(project, "hostr.creds")));
    // Another host: a folder with nothing but the credential, and the server's address.
    const elsewhere = await mkdtemp(join(tmpdir(), "cotal-remote-host-"));
    try {
      const server = JSON.parse(readFileSync(join(project, ".cotal", "mesh.json"), "utf8")).server as string;
      const remote = CotalProcess.spawn(
        ["manager", "--server", server, "--creds", join(project, "hostr.creds"), "--state-dir", join(elsewhere, "state"), "--stop-seats"],
        { cwd: elsewhere, env: cleanEnv({ COTAL_LOG_LEVEL: "warn" }) },
      );
      managers.push(remote);
      // A manager credential is named like its instance: it runs as hostr (its name), and another --instance is refused up front.
      const other = await runCotal(
        ["manager", "--server", server, "--creds", join(project, "hostr.creds"), "--instance", "hostR", "--state-dir", join(elsewhere, "x")],
        {
          cwd: elsewhere,
          timeoutMs: 30_000,
        },
      );
      expect(other.code, other.stderr).toBe(2);
      expect(other.stderr).toContain("runs as instance hostr, not hostR");
      await until(async () => (await ps()).some((m) => m.instance === "hostr"), 20_000, `manager hostr to be listed; its stderr: ${remote.stderr}`);
      const r = ok(await cotal("spawn", "-d", "--agent", "echo", "--name", "remote_echo", "--on", "hostr", "--json"));
      expect(r.json()).toMatchObject({ instance: "hostr", outcome: "started" });
      const stopped = ok(await cotal("stop", "--name", "remote_echo"));
      expect(stopped.stdout).toMatch(/1 credential revoked/);
    } finally {
      await rm(elsewhere, { recursive: true, force: true });
    }
  }, 120_000);

  it("an agent's credential may not spawn: the broker refuses, exit 5", async () => {
    ok(await cotal("mint", "mallory", "--profile", "agent", "--allow-subscribe", "general", "--allow-publish", "general"));
    const res = await cotal("spawn", "-d", "--agent", "echo", "--name", "evil", "--creds", join(project, ".cotal", "creds", "mallory.creds"));
    expect(res.code, res.stderr).toBe(5);
  }, 60_000);
});

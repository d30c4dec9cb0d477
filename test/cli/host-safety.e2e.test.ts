// The CLI is safe on the user's machine, through the shipped bundle, on real nats-servers the
// tests start: one server per store even when the pid files are lost or garbage, background processes that do not inherit
// the caller's secrets, peer text that cannot reach the terminal raw, credential files refused
// with the fix, bounded --since, send without the mesh service, and mint into a user's folder.
import { chmodSync, copyFileSync, mkdirSync, readdirSync, readFileSync, readlinkSync, realpathSync, rmSync, statSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildCli, cleanEnv, freePort, pidAlive, runCotal, type CliResult } from "../harness/cli.js";
import { until } from "../../testbed/until.js";

const projects: string[] = [];
const ok = (r: CliResult) => expect(r.code, `exit code; stdout: ${r.stdout}\nstderr: ${r.stderr}`).toBe(0);

async function newProject(prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  projects.push(dir);
  return dir;
}

interface PidRecord {
  pid: number;
  startTime: string;
}
const pidOf = (project: string, name: "nats-server" | "mesh-service") =>
  JSON.parse(readFileSync(join(project, ".cotal", "run", `${name}.json`), "utf8")) as PidRecord;

/** Live processes whose command line contains `needle` (this user's, any). */
function processesWith(needle: string): number[] {
  const out: number[] = [];
  for (const pid of readdirNumeric("/proc")) {
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").includes(needle) && pidAlive(pid)) out.push(pid);
    } catch {
      // gone
    }
  }
  return out;
}
function readdirNumeric(dir: string): number[] {
  return readdirSync(dir)
    .filter((f) => /^\d+$/.test(f))
    .map(Number);
}
const environOf = (pid: number) => readFileSync(`/proc/${pid}/environ`, "utf8").split("\0");

/** Mesh service processes serving this project (their cwd is it). */
function meshServicesOf(project: string): number[] {
  return readdirNumeric("/proc").filter((pid) => {
    try {
      const argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
      return argv.includes("serve") && argv.includes("mesh") && readlinkSync(`/proc/${pid}/cwd`) === realpathSync(project) && pidAlive(pid);
    } catch {
      return false;
    }
  });
}

beforeAll(async () => {
  await buildCli();
});

afterAll(async () => {
  for (const p of projects) {
    await runCotal(["down"], { cwd: p }).catch(() => undefined);
    await rm(p, { recursive: true, force: true });
  }
});

describe("an open mesh, hardened", () => {
  let project: string;
  let port: number;
  const env = cleanEnv({ AWS_SECRET_ACCESS_KEY: "do-not-leak-1234", COTAL_CREDS: "" });
  delete env.COTAL_CREDS;
  const cotal = (...args: string[]) => runCotal(args, { cwd: project, env });

  beforeAll(async () => {
    project = await newProject("cotal-harden-");
    port = await freePort();
    ok(await cotal("up", "--open", "--detach", "--port", String(port)));
  });

  it("nats-server and the mesh service do not inherit a secret from the environment of `cotal up`", () => {
    for (const name of ["nats-server", "mesh-service"] as const) {
      const environ = environOf(pidOf(project, name).pid);
      expect(environ.some((e) => e.startsWith("PATH="))).toBe(true);
      expect(environ.filter((e) => e.startsWith("AWS_SECRET_ACCESS_KEY="))).toEqual([]);
    }
  });

  it("a second `up` with run/nats-server.json deleted reports the running server instead of starting another on the same store", async () => {
    const before = pidOf(project, "nats-server").pid;
    rmSync(join(project, ".cotal", "run", "nats-server.json"));
    const r = await cotal("up", "--detach", "--open", "--json");
    ok(r);
    const report = r.json<{ natsServer: { state: string; pid: number }; notes: string[] }>();
    expect(report.natsServer).toMatchObject({ state: "running", pid: before });
    expect(report.notes.join("\n")).toMatch(/nats-server\.json was missing; found nats-server pid \d+ by the lock on its store/);
    expect(processesWith(join(project, ".cotal", "nats-server.conf"))).toEqual([before]);
    expect(pidOf(project, "nats-server").pid).toBe(before);
  });

  it("a garbage run/mesh-service.json leads to the running mesh service, not a second one", async () => {
    const real = pidOf(project, "mesh-service").pid;
    writeFileSync(join(project, ".cotal", "run", "mesh-service.json"), "{ not json");
    const r = await cotal("up", "--detach", "--open", "--json");
    ok(r);
    const report = r.json<{ meshService: { state: string; pid: number }; notes: string[] }>();
    expect(report.meshService).toMatchObject({ state: "running", pid: real });
    expect(report.notes.join("\n")).toMatch(/mesh-service\.json was unreadable \(it is not JSON\); found the mesh service pid \d+ running/);
    expect(meshServicesOf(project)).toEqual([real]);
  });

  it("peer text with bidi overrides, line separators, C1 controls and DEL never reaches the terminal raw", async () => {
    const hostile = "pay\u202eevil\u2028forged line\u0085nel\u007fdel\u009bcsi\u001b[31mred";
    const sent = await cotal("send", "msg", "general", hostile, "--as", "mallory");
    ok(sent);
    // eslint-disable-next-line no-control-regex -- matching control characters is the point
    const raw = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;
    expect(sent.stdout).not.toMatch(raw);
    const human = await cotal("history", "general");
    ok(human);
    expect(human.stdout).not.toMatch(raw);
    expect(human.stdout).toContain("pay\\u202eevil\\u2028forged line\\u0085nel\\u007fdel\\u009bcsi\\u001b[31mred");
    expect(human.stdout.trimEnd().split("\n")).toHaveLength(1);
    const json = await cotal("history", "general", "--json");
    ok(json);
    expect(json.stdout).not.toMatch(raw);
    expect(json.stdout).toContain("\\u007f");
    expect(json.stdout).toContain("\\u0085");
    expect(json.json<Array<{ text: string }>>()[0]!.text).toBe(hostile);
  });

  it("history --since that reaches before 1970 is refused as bad input, not an internal error", async () => {
    const r = await cotal("history", "general", "--since", "200000000d");
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("--since: reaches back before 1970");
    expect(r.stderr).not.toMatch(/Invalid time value|internal/);
  });

  it("a credential file others can read is refused with the chmod that fixes it; garbage is named as not a credential", async () => {
    const wide = join(project, "wide.creds");
    writeFileSync(wide, "whatever", { mode: 0o644 });
    chmodSync(wide, 0o644);
    const r = await cotal("roster", "--creds", wide);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`chmod 600 ${wide}`);

    const junk = join(project, "junk.creds");
    writeFileSync(junk, "garbage\n", { mode: 0o600 });
    const g = await cotal("roster", "--creds", junk);
    expect(g.code).toBe(2);
    expect(g.stderr).toContain(`The credential file ${junk} is not a valid NATS credential`);
    expect(g.stderr).not.toContain("Cannot reach the mesh");
  });

  it("send stores without the mesh service; only --mention needs it, and says so", async () => {
    const svc = pidOf(project, "mesh-service").pid;
    process.kill(svc, "SIGKILL");
    await until(() => !pidAlive(svc), 5_000, `mesh service pid ${svc} to die`);
    const msg = await cotal("send", "msg", "general", "still stored", "--as", "alice");
    ok(msg);
    expect(msg.stdout).toMatch(/^stored seq \d+ on general; presence unknown at send/);
    const dm = await cotal("send", "dm", "bob", "hello bob", "--as", "alice");
    ok(dm);
    expect(dm.stdout).toMatch(/^stored seq \d+/);
    const mention = await cotal("send", "msg", "general", "hey", "--as", "alice", "--mention", "bob");
    expect(mention.code).toBe(6);
    expect(mention.stderr).toContain("--mention needs the roster");
    expect(mention.stderr).toContain("nothing was sent");
    expect(mention.stderr).toContain("cotal up");
    // History is served by the mesh service (it enforces read scope): without it, say so.
    const down = await cotal("history", "general", "--json");
    expect(down.code).toBe(6);
    expect(down.stderr).toContain("mesh service");
    ok(await cotal("up", "--detach", "--open")); // repair: what was sent meanwhile was stored
    const h = await cotal("history", "general", "--json");
    const texts = h.json<Array<{ text: string }>>().map((m) => m.text);
    expect(texts).toContain("still stored");
    expect(texts).not.toContain("hey");
  });

  it("down with a garbage mesh-service.json and no nats-server.json still stops both", async () => {
    const svc = pidOf(project, "mesh-service").pid;
    const nats = pidOf(project, "nats-server").pid;
    writeFileSync(join(project, ".cotal", "run", "mesh-service.json"), "garbage");
    rmSync(join(project, ".cotal", "run", "nats-server.json"));
    const r = await cotal("down", "--json");
    ok(r);
    expect(r.json()).toMatchObject({ meshService: { pid: svc, result: "stopped" }, natsServer: { pid: nats, result: "stopped" } });
    expect(pidAlive(svc)).toBe(false);
    expect(pidAlive(nats)).toBe(false);
    expect(meshServicesOf(project)).toEqual([]);
  });
});

describe("a static mesh: minting", () => {
  let project: string;
  const cotal = (...args: string[]) => runCotal(args, { cwd: project });

  beforeAll(async () => {
    project = await newProject("cotal-harden-static-");
    ok(await cotal("up", "--detach", "--port", String(await freePort())));
  });

  it("mint --out into a sticky 1777 folder keeps the folder's mode and sticky bit; the credential is 0600", async () => {
    const shared = join(project, "shared");
    mkdirSync(shared);
    chmodSync(shared, 0o1777);
    const out = join(shared, "alice.creds");
    const r = await cotal("mint", "alice", "--profile", "agent", "--allow-publish", "general", "--allow-subscribe", "general", "--out", out, "--json");
    ok(r);
    expect((statSync(shared).mode & 0o7777).toString(8)).toBe("1777");
    expect((statSync(out).mode & 0o777).toString(8)).toBe("600");
  });

  it("minting with an agent's credential says only the operator credential may mint, not a raw permissions violation", async () => {
    const creds = join(project, "shared", "alice.creds");
    const r = await cotal("mint", "eve", "--profile", "agent", "--creds", creds);
    expect(r.code).toBe(5);
    expect(r.stderr).toContain("The agent credential of local.alice may not mint (only the mesh host's operator credential can");
    expect(r.stderr).not.toMatch(/Permissions Violation|\$JS\.API/);
  });

  it("a garbage cli.creds is named as not a valid credential, not as an unreachable mesh", async () => {
    const cli = join(project, ".cotal", "auth", "creds", "default", "cli.creds");
    const saved = join(project, "cli.creds.saved");
    copyFileSync(cli, saved);
    try {
      writeFileSync(cli, "garbage\n", { mode: 0o600 });
      // An administration command: `roster` here reads with the person's own credential.
      const r = await cotal("channels", "list");
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(`The credential file ${cli} is not a valid NATS credential`);
      expect(r.stderr).not.toContain("Cannot reach the mesh");
    } finally {
      copyFileSync(saved, cli);
    }
  });
});

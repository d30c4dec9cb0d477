// An interrupted or failed `cotal up`, through the shipped CLI: Ctrl-C (SIGINT) at any moment of
// the start stops what that `up` had started — nats-server, the mesh service, the manager, their
// pid files, and the .cotal/ it made — and the next `up` starts afresh; a mesh that ran before the
// interrupted `up` is left running. A failed `up` (a folder it may not write) names the path, the
// cause and the fix, and leaves the folder as it found it.
import { spawn } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readlinkSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildCli, cleanEnv, CotalProcess, cotalBundle, freePort, pidAlive, runCotal } from "../../harness/cli.js";
import { until } from "../../../testbed/until.js";

const scratch = mkdtempSync(join(tmpdir(), "cotal-up-interrupt-"));
chmodSync(scratch, 0o755); // the failed-up cases run as another user
beforeAll(buildCli, 120_000);
afterAll(async () => {
  for (const d of readdirSync(scratch)) await runCotal(["down"], { cwd: join(scratch, d) }).catch(() => undefined);
  rmSync(scratch, { recursive: true, force: true });
});

/** Live processes whose working folder is `dir` (nats-server, the mesh service and the manager run there). */
function processesIn(dir: string, except: number[] = []): Array<{ pid: number; cmd: string }> {
  const out: Array<{ pid: number; cmd: string }> = [];
  for (const e of readdirSync("/proc")) {
    const pid = Number(e);
    if (!Number.isInteger(pid) || except.includes(pid) || !pidAlive(pid)) continue;
    try {
      if (readlinkSync(`/proc/${pid}/cwd`) === dir) out.push({ pid, cmd: readlinkSync(`/proc/${pid}/exe`) });
    } catch {
      // gone, or not ours to read
    }
  }
  return out;
}

/** A fresh project folder. */
function folder(name: string): string {
  const dir = join(scratch, name);
  mkdirSync(dir);
  return dir;
}

/** The moments of a start at which Ctrl-C is sent, each told by what exists by then. */
const MOMENTS: Array<{ name: string; reached: (dir: string, up: number) => boolean }> = [
  { name: "right after nats-server was spawned", reached: (dir, up) => processesIn(dir, [up]).length >= 1 },
  { name: "after nats-server started (its pid file written)", reached: (dir) => existsSync(join(dir, ".cotal", "run", "nats-server.json")) },
  { name: "while the mesh service starts", reached: (dir, up) => processesIn(dir, [up]).length >= 2 },
  { name: "while the manager starts", reached: (dir, up) => processesIn(dir, [up]).length >= 3 },
];

describe("Ctrl-C during `cotal up`", () => {
  for (const [i, moment] of MOMENTS.entries()) {
    it(`${moment.name}: what it started is stopped, nothing of the folder is left running, the next up starts afresh`, async () => {
      const dir = folder(`fresh-${i}`);
      const port = await freePort();
      const up = CotalProcess.spawn(["up", "--port", String(port)], { cwd: dir });
      await until(() => moment.reached(dir, up.child.pid!) || up.child.exitCode !== null, 60_000, moment.name);
      const { code } = await up.stop("SIGINT", 60_000);
      // 130: the start was cut short. Only the last moment may come after the start ended: then it
      // has attached, and Ctrl-C stops the mesh as ever (exit 0).
      expect(i === MOMENTS.length - 1 ? [130, 0] : [130], up.stderr).toContain(code);
      await until(() => processesIn(dir).length === 0, 10_000, `no process left in ${dir}: ${JSON.stringify(processesIn(dir))}`);
      if (code === 130) expect(existsSync(join(dir, ".cotal")), up.stderr).toBe(false); // this up made it
      const again = await runCotal(["up", "-d", "--port", String(port), "--json"], { cwd: dir, timeoutMs: 60_000 });
      expect(again.code, again.stderr).toBe(0);
      expect(again.json<{ natsServer: { state: string } }>().natsServer.state).toBe("started");
      expect((await runCotal(["down"], { cwd: dir })).code).toBe(0);
    }, 120_000);
  }

  it("a mesh that was running before the interrupted up keeps running", async () => {
    const dir = folder("running");
    const first = await runCotal(["up", "-d", "--port", String(await freePort())], { cwd: dir, timeoutMs: 60_000 });
    expect(first.code, first.stderr).toBe(0);
    const before = processesIn(dir).map((p) => p.pid);
    expect(before.length).toBe(3);
    const up = CotalProcess.spawn(["up"], { cwd: dir });
    await until(() => up.stderr.length > 0 || up.lines.length > 0 || up.child.exitCode !== null, 30_000, "the second up to say something");
    await up.stop("SIGINT", 60_000);
    expect(processesIn(dir).map((p) => p.pid)).toEqual(before);
    expect((await runCotal(["status"], { cwd: dir })).code).toBe(0);
  }, 120_000);
});

describe("a failed `cotal up`", () => {
  // Run as another user (nobody), to whom a folder of root's is not writable (root may write anywhere).
  const asNobody = (dir: string, args: string[]) =>
    new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, [cotalBundle, ...args], {
        cwd: dir,
        uid: 65534,
        gid: 65534,
        env: cleanEnv({ HOME: dir }),
        stdio: ["ignore", "ignore", "pipe"],
      });
      let stderr = "";
      child.stderr.setEncoding("utf8").on("data", (c: string) => (stderr += c));
      child.once("close", (code) => resolve({ code, stderr }));
    });
  const canSwitchUser = process.getuid?.() === 0;

  it.skipIf(!canSwitchUser)("in a folder this user may not write: names the folder, the cause and the fix, and creates nothing", async () => {
    const dir = folder("not-mine");
    chmodSync(dir, 0o755);
    const r = await asNobody(dir, ["up", "-d", "--port", String(await freePort())]);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toContain(`cotal: Cannot mkdir ${join(dir, ".cotal")}: permission denied (EACCES).`);
    expect(r.stderr).toContain("in a folder of your own, or give the folder write permission");
    expect(readdirSync(dir)).toEqual([]);
  });

  it.skipIf(!canSwitchUser)("that fails after making .cotal/ (a store folder it may not write) removes the .cotal/ it made", async () => {
    const dir = folder("store-not-mine");
    chmodSync(dir, 0o777);
    const store = join(folder("store-owner"), "store");
    const r = await asNobody(dir, ["up", "-d", "--port", String(await freePort()), "--store-dir", store]);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toContain(`cotal: Cannot mkdir ${store}: permission denied (EACCES).`);
    expect(readdirSync(dir).filter((f) => f === ".cotal")).toEqual([]);
  });
});

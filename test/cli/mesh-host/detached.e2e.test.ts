// A mesh started with `up -d` stays in the background: a broken one is repaired by `up` without
// attaching (so Ctrl-C there can never stop it), status's advice says so, and `cotal logs` shows
// what its processes write, following new lines with --follow.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { CotalProcess, freePort, pidAlive, runCotal, type CliResult, cliFolder } from "../../harness/cli.js";
import { until } from "../../../testbed/until.js";

const { dir: project, cotal } = cliFolder("cotal-detached-", 30_000);
const ok = (r: CliResult, what: string) => expect(r.code, `${what}: exit code; stderr: ${r.stderr}`).toBe(0);
const pidOf = (name: string) => (JSON.parse(readFileSync(join(project, ".cotal", "run", `${name}.json`), "utf8")) as { pid: number }).pid;

beforeAll(async () => {
  ok(await cotal("up", "-d", "--open", "--port", String(await freePort())), "up -d");
}, 60_000);

describe("a detached mesh", () => {
  it("logs prints the last lines of both processes' logs, each with its component", async () => {
    const both = await cotal("logs", "--lines", "3", "--format", "human");
    ok(both, "logs");
    expect(both.stdout).toMatch(/^nats-server \| /m);
    expect(both.stdout).toMatch(/^mesh-service \| .*mesh service running/m);
    const one = await cotal("logs", "mesh-service", "--lines", "1", "--format", "human");
    ok(one, "logs mesh-service");
    expect(one.stdout.trim().split("\n")).toHaveLength(1);
    expect(one.stdout).not.toContain("mesh-service | ");
    const bad = await cotal("logs", "postgres");
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("[component]: component must be nats-server, mesh-service or manager");
  });

  it("broken: status exits 6 and advises up --detach; up repairs it without attaching; logs --follow shows the new service start", async () => {
    const follow = CotalProcess.spawn(["logs", "mesh-service", "--follow", "--lines", "1"], { cwd: project });
    try {
      await until(() => follow.lines.length >= 1, 10_000, "logs --follow to print the last line");
      const before = follow.lines.length;
      const dead = pidOf("mesh-service");
      process.kill(dead, "SIGKILL");
      await until(() => !pidAlive(dead), 5_000, `mesh service pid ${dead} to die`);

      const status = await cotal("status");
      expect(status.code, status.stderr).toBe(6);
      expect(status.stdout).toContain("NOT answering (run `cotal up --detach` on the mesh host to repair it)");

      // Foreground `up` on a mesh started in the background: repairs and returns (it would hang if it attached).
      const up = await runCotal(["up", "--open"], { cwd: project, timeoutMs: 30_000 });
      ok(up, "up");
      expect(up.stdout).toContain("mesh service: repaired");
      expect(up.stderr).toContain("repaired it without attaching");
      ok(await cotal("status"), "status after the repair");
      await until(() => follow.lines.slice(before).some((l) => l.includes("mesh service running")), 10_000, "logs --follow to show the restarted service");
    } finally {
      expect((await follow.stop("SIGINT")).code).toBe(0);
    }
  });

  it("a listener when the mesh goes down: one line, no repeated log lines, and after 10 s it leaves with exit 3", async () => {
    const listen = CotalProcess.spawn(["listen", "--json", "--as", "zoe"], { cwd: project });
    await listen.waitForJson<{ type: string }>((l) => l.type === "ready", 15_000, "listen to be ready");
    ok(await cotal("down"), "down");
    const exit = await Promise.race([
      listen.exited,
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`listen still running 25 s after down\n${listen.stderr}`)), 25_000)),
    ]);
    expect(exit.code, listen.stderr).toBe(3);
    expect(listen.stderr.match(/Lost the connection to the mesh/g)).toHaveLength(1);
    expect(listen.stderr).toContain("did not come back (stopped with `cotal down`?); leaving.");
    // The heartbeat fails every 2 s while the mesh is gone: that complaint is written once.
    expect((listen.stderr.match(/"msg":"presence write failed"/g) ?? []).length).toBeLessThanOrEqual(1);
  });
});

// `cotal up --cluster 3` end to end, in static mode: three nodes, every component healthy, a DM
// between two endpoints, one node SIGKILLed and the DM path still working, `cotal up` starting
// the lost node again, and `cotal down` leaving no process behind.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Endpoint, findNatsServer, handlesStoreWriteErrors, natsServerVersion } from "../../broker/index.js";
import { collect } from "../harness/deliveries.js";
import { buildCli, cleanEnv, freePortRun, pidAlive, runCotal } from "../harness/cli.js";
import { until } from "../../testbed/until.js";

const dir = mkdtempSync(join(tmpdir(), "cotal-cluster-"));
const env = cleanEnv();
const pids = new Set<number>();

interface MeshJson {
  server: string;
  cluster?: { nodes: Array<{ port: number }> };
}
const meshJson = () => JSON.parse(readFileSync(join(dir, ".cotal/mesh.json"), "utf8")) as MeshJson;
const pidOf = (name: string) => (JSON.parse(readFileSync(join(dir, ".cotal/run", `${name}.json`), "utf8")) as { pid: number }).pid;

/**
 * `up` on a new cluster may form it again (20 s each) and waits up to 120 s for JetStream to place the space's R3 streams (a loaded
 * host has taken over 90 s): the harness allows more than that, and a failure shows each node's log.
 */
async function cotal(args: string[]) {
  return runCotal(args, { cwd: dir, env, timeoutMs: 240_000 }).catch((err: unknown) => {
    throw new Error(`${(err as Error).message}\n${nodeLogTails()}`, { cause: err });
  });
}

function nodeLogTails(): string {
  const logs = join(dir, ".cotal/logs");
  if (!existsSync(logs)) return "(no .cotal/logs)";
  return readdirSync(logs)
    .map((f) => `--- ${f} (last 30 lines)\n${readFileSync(join(logs, f), "utf8").split("\n").slice(-30).join("\n")}`)
    .join("\n");
}

/** alice DMs bob and bob gets it: the path from a client through the cluster's DM stream to a consumer. */
async function dmRoundTrip(server: string, text: string): Promise<void> {
  const alice = await Endpoint.connect({ server, space: "default", name: "alice", creds: join(dir, "alice.creds") });
  const bob = await Endpoint.connect({ server, space: "default", name: "bob", creds: join(dir, "bob.creds") });
  try {
    // Right after a node dies, the streams and consumers it led elect new leaders (a few seconds):
    // a join made meanwhile times out, and a client joins again, as the connector does.
    for (const ep of [alice, bob]) {
      await until(
        () =>
          ep.join().then(
            () => true,
            () => false,
          ),
        30_000,
        `${ep.id} to join`,
      );
    }
    const got = collect(bob);
    await alice.dm("bob", text);
    // After a loss, bob's inbox consumer may still be electing a leader on the two nodes left:
    // its pulls go unanswered until then, and the endpoint re-establishes it (a loaded 2-core
    // machine has taken over 15 s). The DM is stored; it must arrive, however long that takes.
    await until(() => got.texts().includes(text), 90_000, `bob to get ${JSON.stringify(text)}`).catch((err: unknown) => {
      throw new Error(`${(err as Error).message}; bob's consumers: ${JSON.stringify(bob.consumerStatus())}`, { cause: err });
    });
  } finally {
    await bob.close();
    await alice.close();
  }
}

beforeAll(async () => {
  await buildCli();
}, 120_000);

afterAll(async () => {
  await cotal(["down"]).catch(() => undefined);
  for (const pid of pids) if (pidAlive(pid)) process.kill(pid, "SIGKILL");
  rmSync(dir, { recursive: true, force: true });
});

describe("cotal up --cluster 3", () => {
  it("runs three nodes (logs and health per node), survives losing one, and stops every process on down", async () => {
    // Three consecutive free client ports: the cluster asks for --port and the two above it.
    const base = await freePortRun(3);
    const up = await cotal(["up", "-d", "--cluster", "3", "--port", String(base), "--json"]);
    // A cluster that never takes the streams is told apart by its nodes' logs (who led, who joined).
    expect(up.code, up.code === 0 ? "" : `${up.stderr}\n${nodeLogTails()}`).toBe(0);
    const report = JSON.parse(up.stdout) as {
      nodes: Array<{ pid: number; port: number }>;
      replicas: number;
      meshService: { pid: number };
      manager: { pid: number };
    };
    expect(report.nodes.map((n) => n.port)).toEqual([base, base + 1, base + 2]);
    expect(report.replicas).toBe(3);
    for (const p of [...report.nodes.map((n) => n.pid), report.meshService.pid, report.manager.pid]) pids.add(p);
    expect(meshJson().server.split(",")).toHaveLength(3);

    const health = await cotal(["status", "--components", "--json"]);
    expect(health.code, health.stdout + health.stderr).toBe(0);
    const checks = (JSON.parse(health.stdout) as { checks: Array<{ name: string; healthy: boolean }> }).checks;
    expect(checks.map((c) => c.name)).toEqual(["nats-server-n1", "nats-server-n2", "nats-server-n3", "mesh-service", "manager"]);
    expect(checks.every((c) => c.healthy)).toBe(true);

    // A cluster on a server before 2.14 loses acknowledged messages when a node's disk fills: doctor names it, and how to avoid it.
    const doctor = await cotal(["doctor", "--json"]);
    const meshCheck = (JSON.parse(doctor.stdout) as { checks: Array<{ id: string; verdict: string; detail: string; fix?: string }> }).checks.find(
      (c) => c.id === "mesh",
    );
    if (handlesStoreWriteErrors(natsServerVersion(findNatsServer())!.text)) expect(meshCheck, doctor.stdout).toMatchObject({ verdict: "pass" });
    else {
      expect(meshCheck, doctor.stdout).toMatchObject({ verdict: "warn", detail: expect.stringContaining("a node whose disk fills") });
      expect(meshCheck?.fix).toContain("2.14 or newer");
    }

    const logs = await cotal(["logs", "nats-server", "--lines", "1", "--format", "human"]);
    expect(logs.code, logs.stderr).toBe(0);
    for (const n of [1, 2, 3]) expect(logs.stdout).toMatch(new RegExp(`^nats-server-n${n} \\| `, "m"));

    for (const who of ["alice", "bob"]) {
      const m = await cotal(["mint", who, "--profile", "agent", "--provision", "--out", join(dir, `${who}.creds`)]);
      expect(m.code, m.stderr).toBe(0);
    }
    const server = meshJson().server;
    await dmRoundTrip(server, "before the loss");

    // Lose a node: the first one, which every client lists first.
    const lost = pidOf("nats-server-n1");
    process.kill(lost, "SIGKILL");
    await until(() => !pidAlive(lost), 5_000, "node 1 to die");
    await dmRoundTrip(server, "after losing node 1");

    const degraded = await cotal(["status", "--components"]);
    expect(degraded.code, degraded.stdout).toBe(8); // the nats-server bit, and only it
    expect(degraded.stdout).toMatch(/nats-server-n1\s+FAILING/);

    // `cotal up` again starts the lost node on its ports; the others keep serving.
    const repair = await cotal(["up", "-d", "--json"]);
    expect(repair.code, repair.code === 0 ? "" : `${repair.stderr}\n${nodeLogTails()}`).toBe(0);
    const repaired = JSON.parse(repair.stdout) as { nodes: Array<{ state: string; pid: number }> };
    expect(repaired.nodes.map((n) => n.state)).toEqual(["started", "running", "running"]);
    pids.add(repaired.nodes[0]!.pid);
    expect((await cotal(["status", "--components"])).code).toBe(0);

    const down = await cotal(["down"]);
    expect(down.code, down.stderr).toBe(0);
    for (const pid of pids) expect(pidAlive(pid), `pid ${pid} after cotal down`).toBe(false);
  }, 600_000);
});

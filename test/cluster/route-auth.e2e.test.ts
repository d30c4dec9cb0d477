// `cotal up --cluster 3` authenticates the routes between its nodes: a nats-server that is not
// the mesh's own (another mesh's node on a reused port, or a rogue one started by anyone on the
// host) dials a node's route port under the cluster's own name and is refused, so it never joins
// the cluster nor sees its traffic. Found by a CI run where two meshes named alike on one host
// could cross-link, and JetStream then placed no R3 stream ("no suitable peers for placement").
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildCli, cleanEnv, freePortRun, runCotal } from "../harness/cli.js";
import { NatsServer } from "../../testbed/nats-server.js";
import { until } from "../../testbed/until.js";

const dir = mkdtempSync(join(tmpdir(), "cotal-route-auth-"));
const env = cleanEnv();
const cotal = (args: string[]) => runCotal(args, { cwd: dir, env, timeoutMs: 240_000 });
let rogue: NatsServer | undefined;

interface ClusterJson {
  cluster: { name: string; routeAuth?: boolean; nodes: Array<{ port: number; routePort: number }> };
}

beforeAll(async () => {
  await buildCli();
}, 120_000);

afterAll(async () => {
  await rogue?.cleanup();
  await cotal(["down"]).catch(() => undefined);
  rmSync(dir, { recursive: true, force: true });
});

describe("cotal up --cluster 3: the routes between nodes", () => {
  it("refuse a server that is not the mesh's own, and keep their password out of mesh.json and the logs", async () => {
    const up = await cotal(["up", "-d", "--cluster", "3", "--port", String(await freePortRun(3)), "--json"]);
    expect(up.code, up.stderr).toBe(0);
    const mesh = JSON.parse(readFileSync(join(dir, ".cotal/mesh.json"), "utf8")) as ClusterJson;
    expect(mesh.cluster.routeAuth).toBe(true);

    const secretFile = join(dir, ".cotal/cluster-route.secret");
    const secret = readFileSync(secretFile, "utf8").trim();
    expect(secret.length).toBeGreaterThanOrEqual(16);
    expect(statSync(secretFile).mode & 0o777).toBe(0o600);
    expect(readFileSync(join(dir, ".cotal/mesh.json"), "utf8")).not.toContain(secret);

    // A rogue server under the cluster's own name, dialing node 1's route port without the password.
    const target = mesh.cluster.nodes[0]!.routePort;
    rogue = await NatsServer.start({
      jetstream: false,
      monitoring: true,
      serverName: "rogue",
      config: `cluster { name: ${JSON.stringify(mesh.cluster.name)}, listen: "127.0.0.1:-1", routes: ["nats-route://127.0.0.1:${target}"] }`,
    });
    // The node refuses it (nats-server names the failed route authorization on the dialing side).
    await until(() => /authorization violation/i.test(rogue!.logs()), 30_000, "the rogue's route to be refused as an authorization violation");
    const routez = (await (await fetch(`${rogue.monitorUrl}/routez`)).json()) as { num_routes: number };
    expect(routez.num_routes, rogue.logs()).toBe(0);

    // The cluster still works: `status` sees every node and service healthy.
    const health = await cotal(["status", "--components", "--json"]);
    expect(health.code, health.stdout + health.stderr).toBe(0);

    // The password is in the nodes' configs (0600) and nowhere in what `cotal logs` reads.
    for (const f of readdirSync(join(dir, ".cotal/logs"))) expect(readFileSync(join(dir, ".cotal/logs", f), "utf8"), f).not.toContain(secret);
    for (const n of [1, 2, 3]) expect(statSync(join(dir, `.cotal/nats-server-n${n}.conf`)).mode & 0o777).toBe(0o600);

    // A cluster described as made before routes were authenticated: `up` says so and how to close it.
    const meshFile = join(dir, ".cotal/mesh.json");
    const old = JSON.parse(readFileSync(meshFile, "utf8")) as ClusterJson;
    delete old.cluster.routeAuth;
    writeFileSync(meshFile, JSON.stringify(old, null, 2));
    const again = await cotal(["up", "-d", "--json"]);
    expect(again.code, again.stderr).toBe(0);
    expect((JSON.parse(again.stdout) as { notes: string[] }).notes.join("\n")).toMatch(/routes are not authenticated.*make it again/);
  }, 400_000);
});

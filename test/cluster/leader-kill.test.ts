// A 3-node JetStream cluster loses the DM stream's leader (SIGKILL) while thousands of DMs are in
// flight: after re-election every DM the sender saw acknowledged reaches its recipient at least
// once. Real nats-servers on loopback (test/harness/cluster.ts), streams at R3.
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { clusterReplicas, Endpoint, fullDiskRisk, handlesStoreWriteErrors, logger, MeshService, uploadTransfer, XferService } from "../../broker/index.js";
import { localPrincipal, messageText, names } from "../../schemas/index.js";
import { cluster, type NatsCluster } from "../harness/cluster.js";
import { TEST_STORAGE } from "../harness/mesh.js";
import { until } from "../../testbed/until.js";

const SPACE = "ha";
const TOTAL = 5_000;
/** DMs in flight at once: enough that the kill lands among unacknowledged publishes. */
const WINDOW = 64;

let c: NatsCluster;
let serviceNc: NatsConnection;
let service: MeshService;
const endpoints: Endpoint[] = [];

beforeAll(async () => {
  c = await cluster(3);
  // Every node's URL, as `cotal up --cluster` hands them to its processes.
  serviceNc = await connect({ servers: [...c.urls], maxReconnectAttempts: -1, reconnectTimeWait: 250 });
  service = await MeshService.start(serviceNc, SPACE, { limits: TEST_STORAGE });
}, 60_000);

afterAll(async () => {
  for (const ep of endpoints) await ep.close().catch(() => undefined);
  await service?.stop().catch(() => undefined);
  await serviceNc?.close().catch(() => undefined);
  await c?.cleanup();
});

describe("a 3-node cluster", () => {
  it("creates the space's streams and buckets at R3 (detected from the server's INFO)", async () => {
    expect(clusterReplicas(serviceNc)).toBe(3);
    // On a server before 2.14 a full disk on one node loses acknowledged messages: the mesh service names it at start.
    const version = serviceNc.info!.version;
    expect(fullDiskRisk(serviceNc)).toEqual(
      handlesStoreWriteErrors(version) ? undefined : expect.stringContaining(`runs nats-server ${version}: before 2.14, a node whose disk fills`),
    );
    const jsm = await jetstreamManager(serviceNc);
    for (const s of [names.dmStream(SPACE), names.chatStream(SPACE), `KV_${names.presenceBucket(SPACE)}`]) {
      expect((await jsm.streams.info(s)).config.num_replicas, s).toBe(3);
    }
    // A transcript carried to a manager lands in that manager's own transfer stream, made on first use: R3 too.
    const dir = mkdtempSync(join(tmpdir(), "cotal-ha-carry-"));
    const file = join(dir, "session.jsonl");
    const bytes = Buffer.from('{"type":"user"}\n');
    writeFileSync(file, bytes);
    const digest = `sha256:${createHash("sha256").update(bytes).digest("hex")}`;
    const xfer = await XferService.start(serviceNc, SPACE, logger("test-xfer"), { operatorOnly: false }); // as `cotal mesh serve` runs it (open mesh)
    await uploadTransfer({ nc: serviceNc, space: SPACE, me: localPrincipal("cli") }, { instance: "box1", file, digest, size: bytes.length });
    expect((await jsm.streams.info(names.xferStream(SPACE, "box1"))).config.num_replicas).toBe(3);
    xfer.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("loses no acknowledged DM when the DM stream's leader is SIGKILLed mid-flight", async () => {
    const server = c.urls.join(",");
    const alice = await Endpoint.connect({ server, space: SPACE, name: "alice" });
    const bob = await Endpoint.connect({ server, space: SPACE, name: "bob" });
    endpoints.push(alice, bob);
    await alice.join();
    await bob.join();

    const received = new Set<string>();
    let ackFailures = 0;
    void (async () => {
      for await (const d of bob.deliveries) {
        received.add(messageText(d.message));
        // An ack is tried again while the consumer's new leader is elected; one that never lands
        // is acked again when the broker redelivers it (test/mesh/ack-unconfirmed.test.ts).
        await d.ack().catch(() => void (ackFailures += 1));
      }
    })();

    const acked = new Set<string>();
    const failed: string[] = [];
    const jsm = await jetstreamManager(serviceNc);
    let killed: string | undefined;
    let next = 0;
    const worker = async () => {
      while (next < TOTAL) {
        const text = `dm-${next++}`;
        try {
          await alice.dm("bob", text);
          acked.add(text);
        } catch {
          failed.push(text); // never acknowledged: the sender knows it was not stored
        }
        if (!killed && acked.size >= TOTAL / 4) {
          killed = "pending";
          const leader = (await jsm.streams.info(names.dmStream(SPACE))).cluster?.leader;
          const node = c.servers.find((s) => s.serverName === leader);
          expect(node, `the DM stream's leader ${leader} among the nodes`).toBeDefined();
          killed = leader;
          await node!.kill();
        }
      }
    };
    await Promise.all(Array.from({ length: WINDOW }, worker));
    expect(killed).toBeDefined();
    // A new leader was elected among the two nodes left.
    const after = (await jsm.streams.info(names.dmStream(SPACE))).cluster?.leader;
    expect(after).toBeDefined();
    expect(after).not.toBe(killed);

    expect(acked.size + failed.length).toBe(TOTAL);
    expect(acked.size).toBeGreaterThan(TOTAL * 0.9);
    /** What is stuck, for a failure message: bob's consumer as the broker sees it. */
    const bobConsumer = async () => {
      const ci = await jsm.consumers.info(names.dmStream(SPACE), "dm_local-bob");
      return `missing ${[...acked].filter((t) => !received.has(t)).length}; ack failures ${ackFailures}; consumer ${JSON.stringify({ delivered: ci.delivered, ack_floor: ci.ack_floor, num_pending: ci.num_pending, num_ack_pending: ci.num_ack_pending, num_redelivered: ci.num_redelivered, leader: ci.cluster?.leader })}`;
    };
    await until(() => [...acked].every((t) => received.has(t)), 60_000, `all ${acked.size} acknowledged DMs to reach bob`).catch(async (err: Error) => {
      throw new Error(`${err.message}: ${await bobConsumer()}`);
    });
    // And every ack landed in the end: the broker holds nothing of bob's unacked or undelivered.
    await until(
      async () => {
        const ci = await jsm.consumers.info(names.dmStream(SPACE), "dm_local-bob");
        return ci.num_ack_pending === 0 && ci.num_pending === 0;
      },
      60_000,
      "bob's consumer to have nothing pending",
    ).catch(async (err: Error) => {
      throw new Error(`${err.message}: ${await bobConsumer()}`);
    });
  }, 240_000);
});

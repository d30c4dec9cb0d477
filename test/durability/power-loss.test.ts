// Power loss, Jepsen's LazyFS method: each nats-server's store sits on a FUSE layer
// (testbed/lazyfs.py) that keeps writes in memory until they are fsynced. Alice sends DMs to bob
// (offline), each acknowledged by JetStream; then the power goes: every server is SIGKILLed and
// every layer killed, so whatever was not fsynced is gone. After the "reboot" bob joins and
// reads his inbox. With `sync_interval: always` every acknowledged DM reaches him; with the
// server's 2-minute default some do not, which proves the test can see a loss.
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { afterEach, describe, expect, it } from "vitest";
import { Endpoint, isStreamNotFound, MeshService } from "../../broker/index.js";
import { durables, localPrincipal, names } from "../../schemas/index.js";
import { lazyFsMissing, mountLazyFs, type LazyMount } from "../../testbed/lazyfs.js";
import { NatsServer } from "../../testbed/nats-server.js";
import { cluster, type NatsCluster } from "../harness/cluster.js";
import { TEST_STORAGE } from "../harness/mesh.js";
import { until } from "../../testbed/until.js";

/** DMs sent before the power cut: enough to span several fsyncs, few enough to stay quick. */
const N = 300;
const SPACE = "power";

// Without FUSE the tests fail saying what is missing; COTAL_SKIP_POWER_LOSS opts out, loudly.
const skipReason = process.env.COTAL_SKIP_POWER_LOSS ? `COTAL_SKIP_POWER_LOSS is set${lazyFsMissing() ? `; also ${lazyFsMissing()}` : ""}` : undefined;
if (skipReason) console.warn(`*** POWER-LOSS TESTS SKIPPED (test/durability/power-loss.test.ts): ${skipReason}`);

/** Servers whose stores sit on lazyfs mounts, with the power switch for all of them at once. */
interface PoweredMesh {
  /** Client URLs of every node (stable across the power cut). */
  urls(): string[];
  /** Time passing: every layer writes back what it holds, as a kernel does ~30 s after a write. */
  writeBack(): Promise<void>;
  /** SIGKILL every nats-server, then every layer: unsynced writes are lost. */
  cutPower(): Promise<void>;
  /** Mount each layer again on what its backing dir kept and restart the servers. */
  restore(): Promise<void>;
  /** Each node's server log and layer output, for a failure message. */
  logs(): string;
  cleanup(): Promise<void>;
}

/** `n` lazyfs mounts under one temp dir; unmounted (lazily) and removed by cleanup(). */
interface Mounts {
  dirs: string[];
  layers: LazyMount[];
  /** Mount every layer again on its backing dir (after a power cut). */
  remount(): Promise<void>;
  writeBack(): Promise<void>;
  cleanup(): Promise<void>;
}

async function mounts(n: number): Promise<Mounts> {
  const root = await mkdtemp(join(tmpdir(), "cotal-power-"));
  const dirs = Array.from({ length: n }, (_, i) => join(root, `mnt${i + 1}`));
  const backings = dirs.map((d) => `${d}.backing`);
  await Promise.all([...dirs, ...backings].map((d) => mkdir(d)));
  const layers: LazyMount[] = [];
  const mountAll = async () => {
    layers.splice(0, layers.length, ...(await Promise.all(dirs.map((d, i) => mountLazyFs(backings[i]!, d)))));
  };
  const cleanup = async () => {
    await Promise.all(layers.map((l) => l.unmount().catch(() => undefined)));
    await rm(root, { recursive: true, force: true });
  };
  try {
    await mountAll();
  } catch (err) {
    await cleanup();
    throw err;
  }
  const writeBack = async () => {
    await Promise.all(layers.map((l) => l.writeBack()));
  };
  return { dirs, layers, remount: mountAll, writeBack, cleanup };
}

async function singleNode(syncInterval: string): Promise<PoweredMesh> {
  const m = await mounts(1);
  let server: NatsServer;
  try {
    server = await NatsServer.start({ jetstream: { storeDir: m.dirs[0]!, syncInterval } });
  } catch (err) {
    await m.cleanup();
    throw err;
  }
  return {
    urls: () => [server.url],
    writeBack: () => m.writeBack(),
    async cutPower() {
      await server.kill();
      await Promise.all(m.layers.map((l) => l.cutPower()));
    },
    async restore() {
      await m.remount();
      await server.restart();
    },
    logs: () => `${server.logs()}\n--- lazyfs ---\n${m.layers.map((l) => l.logs()).join("\n")}`,
    async cleanup() {
      await server.cleanup();
      await m.cleanup();
    },
  };
}

/**
 * A 3-node cluster whose stores sit on lazyfs mounts. Forming one on loopback now and then
 * leaves a node never current (seen here about 1 time in 10, on plain disks as on lazyfs); that
 * is setup, before any DM, so it is tried once more on fresh mounts. The power cut gets no retry.
 */
async function clusterOnLazyFs(syncInterval: string): Promise<{ m: Mounts; c: NatsCluster }> {
  for (let attempt = 1; ; attempt++) {
    const m = await mounts(3);
    try {
      // Three servers on three Python layers share two cores here: forming takes longer than on disk.
      return { m, c: await cluster(3, { jetstream: { syncInterval }, storeDirs: m.dirs, startTimeoutMs: 60_000 }) };
    } catch (err) {
      await m.cleanup();
      if (attempt === 2) throw err;
    }
  }
}

async function threeNodes(syncInterval: string): Promise<PoweredMesh> {
  const { m, c } = await clusterOnLazyFs(syncInterval);
  const logs = () => `${c.logs()}\n--- lazyfs ---\n${m.layers.map((l) => l.logs()).join("\n")}`;
  return {
    urls: () => [...c.urls],
    writeBack: () => m.writeBack(),
    async cutPower() {
      await Promise.all(c.servers.map((s) => s.kill()));
      await Promise.all(m.layers.map((l) => l.cutPower()));
    },
    async restore() {
      await m.remount();
      // One after another, as machines come back: three nodes soliciting each other's routes at
      // the same instant is what sometimes leaves one out of the meta group (see above).
      for (const s of c.servers) await s.restart();
      // A majority current is what serves the streams. After a cut a node has stayed behind the
      // leader for over a minute (current false, lag 27: a CI run); whether every acknowledged DM
      // is still there is this test's outcome, read below from the nodes that serve. Twice in
      // about ten CI runs (never alone) no meta leader was elected within 60 s of the restarts,
      // the cluster project's other files beside three Python lazyfs layers on two cores: the
      // bound is a bound, not a wait, so it is wide; should it still run out, the error carries the
      // servers' and the layers' logs.
      await c.waitForMetaLeader(150_000, { majority: true }).catch((err: Error) => {
        throw new Error(`${err.message}\n${logs()}`, { cause: err });
      });
      await streamsLed(c.urls);
    },
    logs,
    async cleanup() {
      await c.cleanup();
      await m.cleanup();
    },
  };
}

/**
 * Wait until every stream the restarted cluster recovered has a leader: until then its API calls
 * time out, and the mesh service's provisioning with them.
 */
async function streamsLed(urls: readonly string[]): Promise<void> {
  const nc = await connect({ servers: [...urls] });
  try {
    const jsm = await jetstreamManager(nc);
    await until(
      async () => {
        for await (const name of jsm.streams.names()) {
          if (!(await jsm.streams.info(name)).cluster?.leader) return false;
        }
        return true;
      },
      60_000,
      "every stream of the restarted cluster to have a leader",
      250,
    );
  } finally {
    await nc.close();
  }
}

/** What a user would count: the ids alice got receipts for, and the ids bob was handed. */
interface Outcome {
  acknowledged: string[];
  delivered: Set<string>;
  /** Messages the DM stream held when the power came back; undefined when the stream itself was lost. */
  kept: number | undefined;
  /** Bob's inbox as the broker saw it at the end, for a failure message. */
  inbox: string;
}

/** Clients to close after each test, then the servers and mounts (removed even if a client hangs). */
const closers: (() => Promise<unknown>)[] = [];
let powered: PoweredMesh | undefined;
afterEach(async () => {
  const clients = (async () => {
    for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
  })();
  await Promise.race([clients, new Promise((r) => setTimeout(r, 10_000).unref())]);
  await powered?.cleanup();
  powered = undefined;
}, 60_000);

/**
 * A mesh service on its own connection to every node, as `cotal up` runs it (it provisions what
 * the store lacks). `end()` drops its connection at once, as its process dying with the host
 * would; otherwise it is ended after the test.
 */
async function startService(mesh: PoweredMesh): Promise<{ nc: NatsConnection; end: () => Promise<void> }> {
  const nc = await connect({ servers: mesh.urls(), maxReconnectAttempts: -1, reconnectTimeWait: 250 });
  const service = await MeshService.start(nc, SPACE, { limits: TEST_STORAGE });
  const end = async () => {
    await nc.close();
    await service.stop().catch(() => undefined);
  };
  closers.push(end);
  return { nc, end };
}

async function endpoint(mesh: PoweredMesh, name: string): Promise<Endpoint> {
  const ep = await Endpoint.connect({ server: mesh.urls().join(","), space: SPACE, name });
  closers.push(() => ep.close());
  await ep.join();
  return ep;
}

/** The DM stream's state before the mesh service re-provisions anything; undefined if the stream is gone. */
async function storedDms(mesh: PoweredMesh): Promise<{ messages: number; lastSeq: number } | undefined> {
  const nc = await connect({ servers: mesh.urls() });
  try {
    const { state } = await (await jetstreamManager(nc)).streams.info(names.dmStream(SPACE));
    return { messages: state.messages, lastSeq: state.last_seq };
  } catch (err) {
    if (isStreamNotFound(err)) return undefined;
    throw err;
  } finally {
    await nc.close();
  }
}

/** Send N acknowledged DMs to an offline bob, cut the power, restore it, and let bob read everything left. */
async function sendCutRestoreRead(mesh: PoweredMesh): Promise<Outcome> {
  // A mesh that has been up a while: bob is a member who is away (his inbox exists and holds
  // what alice sends), and the kernel has long written the streams and his inbox to disk.
  const service = await startService(mesh);
  await (await endpoint(mesh, "bob")).close();
  const alice = await endpoint(mesh, "alice");
  await mesh.writeBack();
  const acknowledged: string[] = [];
  for (let i = 0; i < N; i++) acknowledged.push((await alice.dm("bob", `dm-${i}`)).id);

  await mesh.cutPower();
  await service.end(); // the host's processes died with it (alice, elsewhere, reconnects on her own)
  await mesh.restore();
  const stored = await storedDms(mesh);
  const { nc } = await startService(mesh);
  const jsm = await jetstreamManager(nc);
  const bob = await endpoint(mesh, "bob");
  const delivered = new Set<string>();
  void (async () => {
    for await (const d of bob.deliveries) {
      delivered.add(d.message.id);
      await d.ack().catch(() => undefined);
    }
  })();
  // Everything the store kept has reached bob once his inbox has delivered up to the stream's
  // last message and holds nothing unacked (a consumer leader just elected may report nothing
  // pending before it has looked, so the delivered sequence is what counts).
  let inbox = "";
  await until(
    async () => {
      const ci = await jsm.consumers.info(names.dmStream(SPACE), durables.dm(localPrincipal("bob")));
      const { delivered: d, ack_floor: a, num_pending, num_ack_pending, num_redelivered } = ci;
      inbox = JSON.stringify({ delivered: d, ack_floor: a, num_pending, num_ack_pending, num_redelivered, leader: ci.cluster?.leader });
      return ci.delivered.stream_seq >= (stored?.lastSeq ?? 0) && num_pending === 0 && num_ack_pending === 0;
    },
    60_000,
    "bob's inbox to have nothing left to deliver after the power came back",
  ).catch((err: Error) => {
    throw new Error(`${err.message}; bob got ${delivered.size} of ${acknowledged.length}; his inbox: ${inbox}\n${mesh.logs()}`);
  });
  return { acknowledged, delivered, kept: stored?.messages, inbox };
}

function lost(o: Outcome): string[] {
  return o.acknowledged.filter((id) => !o.delivered.has(id));
}

function lossReport(o: Outcome): string {
  return `${lost(o).length} of ${o.acknowledged.length} acknowledged DMs never reached bob (${o.kept === undefined ? "the DM stream itself was lost" : `the DM stream kept ${o.kept} messages`}); bob's inbox: ${o.inbox}`;
}

async function withMesh(start: (sync: string) => Promise<PoweredMesh>, sync: string): Promise<PoweredMesh> {
  powered = await start(sync);
  return powered;
}

describe.skipIf(skipReason !== undefined)("power loss (stores on lazyfs: unsynced writes are lost)", () => {
  it(`one node with sync_interval always: all ${N} acknowledged DMs reach bob after the power comes back`, async () => {
    const o = await sendCutRestoreRead(await withMesh(singleNode, "always"));
    expect(o.acknowledged).toHaveLength(N);
    expect(lost(o), lossReport(o)).toEqual([]);
  }, 120_000);

  it(`a 3-node R3 cluster with sync_interval always, power cut on all three at once: all ${N} acknowledged DMs reach bob`, async () => {
    const o = await sendCutRestoreRead(await withMesh(threeNodes, "always"));
    expect(o.acknowledged).toHaveLength(N);
    expect(lost(o), lossReport(o)).toEqual([]);
  }, 300_000);

  it("one node with the server's default sync_interval (2m) loses acknowledged DMs: the test can see a loss", async () => {
    const o = await sendCutRestoreRead(await withMesh(singleNode, "2m"));
    expect(o.acknowledged).toHaveLength(N);
    console.info(`power loss with sync_interval 2m: ${lossReport(o)}`);
    expect(lost(o).length).toBeGreaterThan(0);
  }, 120_000);
});

// Entry of `node dist/bench-cluster.mjs` (run by `npm run bench`): Cotal's DM latency and
// throughput on one nats-server and on a 3-node JetStream cluster with every stream at R3, side
// by side; and, on one node, what the broker spends per durable consumer and per joined seat.
// Private servers on loopback only (never the shared one). BENCH_QUICK=1 runs smaller counts.
// The figures are written into docs/scaling.md.
import { readFileSync } from "node:fs";
import { cpus } from "node:os";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { AckPolicy, jetstreamManager } from "@nats-io/jetstream";
import { clusterReplicas, MeshService } from "../broker/index.js";
import { NatsServer } from "../testbed/nats-server.js";
import { freePorts } from "../testbed/ports.js";
import { Scope, now } from "./context.js";
import { dmLatency } from "./dm-latency.js";
import { dmThroughput } from "./dm-throughput.js";
import { fmt } from "./report.js";

process.env.COTAL_LOG_LEVEL ??= "warn";

const QUICK = process.env.BENCH_QUICK === "1";
const SPACE = "bench";
const PLAN = QUICK
  ? { latency: { samples: 300, warmup: 50, blocks: 2 }, throughput: { messages: 3_000, warmup: 300, inflight: 256, rounds: 2 }, consumers: 500, seats: 30 }
  : {
      latency: { samples: 2_000, warmup: 200, blocks: 4 },
      throughput: { messages: 10_000, warmup: 1_000, inflight: 256, rounds: 2 },
      consumers: 2_000,
      seats: 100,
    };
const JS_LIMITS = { maxMemoryStore: "256MB", maxFileStore: "16GB" };

interface Topology {
  servers: NatsServer[];
  url: string;
  cleanup(): Promise<void>;
}

async function single(): Promise<Topology> {
  const s = await NatsServer.start({ jetstream: JS_LIMITS });
  return { servers: [s], url: s.url, cleanup: () => s.cleanup() };
}

/** Three nodes on loopback, routes between them, formed when the space can be provisioned at R3. */
async function cluster3(): Promise<Topology> {
  const routes = await freePorts(3);
  const all = routes.map((p) => `nats-route://127.0.0.1:${p}`).join(", ");
  const servers = await Promise.all(
    routes.map((p, i) =>
      NatsServer.start({
        jetstream: JS_LIMITS,
        serverName: `bench-n${i + 1}`,
        ready: async () => {},
        config: `cluster {\n  name: "cotal-bench"\n  listen: "127.0.0.1:${p}"\n  routes: [${all}]\n}`,
      }),
    ),
  );
  return { servers, url: servers.map((s) => s.url).join(","), cleanup: async () => void (await Promise.all(servers.map((s) => s.cleanup()))) };
}

/** The mesh service on `url`; on a cluster JetStream answers once a meta leader is elected, so provisioning is retried. */
async function meshService(url: string): Promise<{ nc: NatsConnection; service: MeshService; replicas: number }> {
  const nc = await connect({ servers: url.split(","), name: "bench-mesh-service", maxReconnectAttempts: -1, reconnectTimeWait: 250 });
  const deadline = now() + 30_000;
  for (;;) {
    try {
      const service = await MeshService.start(nc, SPACE);
      return { nc, service, replicas: clusterReplicas(nc) };
    } catch (err) {
      if (now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

function rssKiB(pid: number | undefined): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return m ? Number(m[1]) : NaN;
}

interface DmFigures {
  replicas: number;
  p50: number;
  p99: number;
  throughput: number;
  rawP50: number;
  rawThroughput: number;
}

async function dmFigures(t: Topology): Promise<DmFigures> {
  const { nc, service, replicas } = await meshService(t.url);
  // Endpoints dial the first node and learn the others from it (as a client of `cotal up --cluster` lists them all).
  const scope = new Scope(t.servers[0]!.url, SPACE);
  try {
    const lat = await dmLatency(scope, PLAN.latency);
    const tp = await dmThroughput(scope, PLAN.throughput);
    return { replicas, p50: lat.cotal.p50, p99: lat.cotal.p99, throughput: tp.cotal, rawP50: lat.raw.p50, rawThroughput: tp.raw };
  } finally {
    await scope.close();
    await service.stop().catch(() => undefined);
    await nc.close().catch(() => undefined);
  }
}

/** Server memory per durable pull consumer and per joined seat, on one node. */
async function perResource(): Promise<{ consumerKiB: number; seatKiB: number }> {
  const t = await single();
  const { nc, service } = await meshService(t.url);
  const pid = t.servers[0]!.pid;
  try {
    // Seats first, on a fresh server: freed memory of anything measured before would hide theirs.
    const scope = new Scope(t.url, SPACE);
    const beforeSeats = rssKiB(pid);
    for (let i = 0; i < PLAN.seats; i++) await scope.joined(`seat_${i}`);
    await nc.flush();
    const seatKiB = (rssKiB(pid) - beforeSeats) / PLAN.seats;

    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({ name: "BENCH_CONSUMERS", subjects: ["benchc.>"] });
    const before = rssKiB(pid);
    for (let i = 0; i < PLAN.consumers; i++) {
      await jsm.consumers.add("BENCH_CONSUMERS", { durable_name: `c${i}`, filter_subject: `benchc.${i}`, ack_policy: AckPolicy.Explicit });
    }
    await nc.flush();
    const consumerKiB = (rssKiB(pid) - before) / PLAN.consumers;
    await scope.close();
    return { consumerKiB, seatKiB };
  } finally {
    await service.stop().catch(() => undefined);
    await nc.close().catch(() => undefined);
    await t.cleanup();
  }
}

async function main(): Promise<void> {
  console.log(`cotal cluster bench: ${cpus().length} × ${cpus()[0]?.model ?? "cpu"}, Node ${process.version}, loopback${QUICK ? ", BENCH_QUICK=1" : ""}`);
  const started = now();
  const step = (what: string) => console.log(`[${((now() - started) / 1000).toFixed(1)} s] ${what}`);
  // Two rounds, alternating (one node, cluster, cluster, one node) so warm-up and drift hit both; the mean is reported.
  const runs: Record<string, DmFigures[]> = { "one node": [], "3-node cluster": [] };
  const order = [
    ["one node", single],
    ["3-node cluster", cluster3],
    ["3-node cluster", cluster3],
    ["one node", single],
  ] as const;
  for (const [name, make] of order) {
    step(`${name}: DM latency (${PLAN.latency.samples} sequential) and throughput (${PLAN.throughput.messages}, ${PLAN.throughput.inflight} in flight)`);
    const t = await make();
    try {
      runs[name]!.push(await dmFigures(t));
    } finally {
      await t.cleanup();
    }
  }
  const mean = (xs: DmFigures[]): DmFigures => {
    const avg = (k: keyof DmFigures) => xs.reduce((a, x) => a + x[k], 0) / xs.length;
    return {
      replicas: xs[0]!.replicas,
      p50: avg("p50"),
      p99: avg("p99"),
      throughput: avg("throughput"),
      rawP50: avg("rawP50"),
      rawThroughput: avg("rawThroughput"),
    };
  };
  const results = { "one node": mean(runs["one node"]!), "3-node cluster": mean(runs["3-node cluster"]!) };
  step(`one node: server memory for ${PLAN.seats} joined seats, then ${PLAN.consumers} durable consumers`);
  const mem = await perResource();

  const one = results["one node"];
  const three = results["3-node cluster"];
  console.log("");
  console.log("| measure | one node (R1) | 3-node cluster (R3) | cluster ÷ one node |");
  console.log("|---|---:|---:|---:|");
  console.log(`| DM latency p50, ms | ${fmt(one.p50)} | ${fmt(three.p50)} | ${fmt(three.p50 / one.p50)} |`);
  console.log(`| DM latency p99, ms | ${fmt(one.p99)} | ${fmt(three.p99)} | ${fmt(three.p99 / one.p99)} |`);
  console.log(`| DM throughput, msg/s | ${fmt(one.throughput)} | ${fmt(three.throughput)} | ${fmt(three.throughput / one.throughput)} |`);
  console.log(`| raw client (R1 stream) latency p50, ms | ${fmt(one.rawP50)} | ${fmt(three.rawP50)} | ${fmt(three.rawP50 / one.rawP50)} |`);
  console.log(
    `| raw client (R1 stream) throughput, msg/s | ${fmt(one.rawThroughput)} | ${fmt(three.rawThroughput)} | ${fmt(three.rawThroughput / one.rawThroughput)} |`,
  );
  console.log(`| stream replicas seen | ${one.replicas} | ${three.replicas} | |`);
  console.log("");
  console.log(`server memory per durable consumer: ${fmt(mem.consumerKiB)} KiB (${PLAN.consumers} consumers)`);
  console.log(`server memory per joined seat (DM durable, presence, control): ${fmt(mem.seatKiB)} KiB (${PLAN.seats} seats)`);
  console.log(`\ndone in ${((now() - started) / 1000).toFixed(1)} s`);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);

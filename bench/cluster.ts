// Cotal's DM latency and throughput on one nats-server and on a 3-node JetStream cluster with
// every stream at R3, side by side, each beside the raw client on the same servers; and, on one
// node, what the broker spends per durable consumer and per joined seat. `node
// dist/bench-cluster.mjs` (run by `npm run bench`; BENCH_QUICK=1: smaller counts). Private
// servers on loopback only (never the shared one). The figures are written into docs/scaling.md.
import { readFileSync } from "node:fs";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { AckPolicy, jetstreamManager } from "@nats-io/jetstream";
import { clusterReplicas, MeshService } from "../broker/index.js";
import { NatsServer } from "../testbed/nats-server.js";
import { freePorts } from "../testbed/ports.js";
import { under, type Tallies } from "./checks.js";
import { Scope, now } from "./context.js";
import type { CpuPerMessage } from "./cpu.js";
import { dmLatency, type DmLatencyOptions } from "./dm-latency.js";
import { dmThroughput, type DmThroughputOptions } from "./dm-throughput.js";
import { fmt, type BenchReport, type BenchRun, type Row } from "./report.js";
import { Teardown } from "./teardown.js";

export interface ClusterPlan {
  latency: DmLatencyOptions;
  throughput: DmThroughputOptions;
  /** Durable consumers added on one node to measure the server's memory per consumer. */
  consumers: number;
  /** Seats joined on one node to measure the server's memory per seat. */
  seats: number;
  /** 1: one node, then the cluster; 2: one node, cluster, cluster, one node (drift hits both; the mean is reported). */
  rounds: 1 | 2;
}

export const CLUSTER_PLANS: Record<"full" | "quick" | "smoke", ClusterPlan> = {
  full: {
    latency: { samples: 2_000, warmup: 200, blocks: 4 },
    throughput: { messages: 10_000, warmup: 1_000, inflight: 256, rounds: 2 },
    consumers: 2_000,
    seats: 100,
    rounds: 2,
  },
  quick: {
    latency: { samples: 300, warmup: 50, blocks: 2 },
    throughput: { messages: 3_000, warmup: 300, inflight: 256, rounds: 2 },
    consumers: 500,
    seats: 30,
    rounds: 2,
  },
  smoke: {
    latency: { samples: 10, warmup: 2, blocks: 2 },
    throughput: { messages: 20, warmup: 2, inflight: 8, rounds: 2 },
    consumers: 20,
    seats: 3,
    rounds: 1,
  },
};

const SPACE = "bench";
const JS_LIMITS = { maxMemoryStore: "256MB", maxFileStore: "16GB" };
/** How long a topology may take to provision the space before it is formed again. */
const PROVISION_MS = 30_000;
const FORMATIONS = 3;

interface Topology {
  servers: NatsServer[];
  url: string;
}

async function single(td: Teardown): Promise<Topology> {
  const s = await NatsServer.start({ jetstream: JS_LIMITS });
  td.defer(() => s.cleanup());
  return { servers: [s], url: s.url };
}

/** Three nodes on loopback, routes between them. */
async function cluster3(td: Teardown): Promise<Topology> {
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
  td.defer(() => Promise.all(servers.map((s) => s.cleanup())));
  return { servers, url: servers.map((s) => s.url).join(",") };
}

/** The mesh service on `url`; on a cluster JetStream answers once a meta leader is elected, so provisioning is retried. */
async function meshService(url: string, td: Teardown): Promise<{ nc: NatsConnection; replicas: number }> {
  const nc = await connect({ servers: url.split(","), name: "bench-mesh-service", maxReconnectAttempts: -1, reconnectTimeWait: 250 });
  td.defer(() => nc.close());
  const deadline = now() + PROVISION_MS;
  for (;;) {
    try {
      const service = await MeshService.start(nc, SPACE);
      td.defer(() => service.stop());
      return { nc, replicas: clusterReplicas(nc) };
    } catch (err) {
      if (now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

/**
 * A topology with the space provisioned. A cluster whose nodes never agree on a meta leader, or
 * leave a peer not current so no R3 stream can be placed, is stuck rather than slow on a loaded
 * 2-core machine: it is torn down and formed again (up to three formations).
 */
async function provisioned(make: (td: Teardown) => Promise<Topology>, parent: Teardown): Promise<Topology & { replicas: number }> {
  for (let attempt = 1; ; attempt++) {
    const formation = new Teardown();
    parent.defer(() => formation.close());
    try {
      const t = await make(formation);
      const { replicas } = await meshService(t.url, formation);
      return { ...t, replicas };
    } catch (err) {
      await formation.close();
      if (attempt >= FORMATIONS) throw err;
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
  /** CPU per DM, µs, of the bench process and every node (bench/cpu.ts). */
  latencyCpu: CpuPerMessage;
  throughputCpu: CpuPerMessage;
}

async function dmFigures(plan: ClusterPlan, make: (td: Teardown) => Promise<Topology>, td: Teardown): Promise<{ figures: DmFigures; tallies: Tallies }> {
  const own = new Teardown();
  td.defer(() => own.close());
  try {
    const t = await provisioned(make, own);
    // Endpoints dial the first node and learn the others from it (as a client of `cotal up --cluster` lists them all).
    const nodes = t.servers.flatMap((s) => (s.pid ? [s.pid] : []));
    const scope = new Scope(t.servers[0]!.url, SPACE, nodes);
    own.defer(() => scope.close());
    const lat = await dmLatency(scope, plan.latency);
    const tp = await dmThroughput(scope, plan.throughput);
    return {
      figures: {
        replicas: t.replicas,
        p50: lat.cotal.p50,
        p99: lat.cotal.p99,
        throughput: tp.cotal,
        rawP50: lat.raw.p50,
        rawThroughput: tp.raw,
        latencyCpu: lat.cpu,
        throughputCpu: { cotal: tp.cpu.cotal, raw: tp.cpu.raw },
      },
      tallies: { ...under("latency", lat.tallies), ...under("throughput", tp.tallies) },
    };
  } finally {
    await own.close();
  }
}

/** Server memory per durable pull consumer and per joined seat, on one node. */
async function perResource(plan: ClusterPlan, td: Teardown): Promise<{ consumerKiB: number; seatKiB: number }> {
  const own = new Teardown();
  td.defer(() => own.close());
  try {
    const t = await provisioned(single, own);
    const pid = t.servers[0]!.pid;
    // Seats first, on a fresh server: freed memory of anything measured before would hide theirs.
    const scope = new Scope(t.url, SPACE);
    own.defer(() => scope.close());
    const beforeSeats = rssKiB(pid);
    for (let i = 0; i < plan.seats; i++) await scope.joined(`seat_${i}`);
    const nc = await connect({ servers: t.url, name: "bench-per-resource" });
    own.defer(() => nc.close());
    await nc.flush();
    const seatKiB = (rssKiB(pid) - beforeSeats) / plan.seats;

    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({ name: "BENCH_CONSUMERS", subjects: ["benchc.>"] });
    const before = rssKiB(pid);
    for (let i = 0; i < plan.consumers; i++) {
      await jsm.consumers.add("BENCH_CONSUMERS", { durable_name: `c${i}`, filter_subject: `benchc.${i}`, ack_policy: AckPolicy.Explicit });
    }
    await nc.flush();
    return { consumerKiB: (rssKiB(pid) - before) / plan.consumers, seatKiB };
  } finally {
    await own.close();
  }
}

export async function clusterBench(plan: ClusterPlan, { td, step }: BenchRun): Promise<BenchReport> {
  const runs: Record<string, DmFigures[]> = { "one node": [], "3-node cluster": [] };
  let tallies: Tallies = {};
  const order = [["one node", single] as const, ["3-node cluster", cluster3] as const];
  if (plan.rounds === 2) order.push(...[...order].reverse());
  for (const [name, make] of order) {
    step(`${name}: DM latency (${plan.latency.samples} sequential) and throughput (${plan.throughput.messages}, ${plan.throughput.inflight} in flight)`);
    const r = await dmFigures(plan, make, td);
    runs[name]!.push(r.figures);
    tallies = { ...tallies, ...under(`${name} ${runs[name]!.length}`, r.tallies) };
  }
  const mean = (xs: DmFigures[]): DmFigures => {
    const avg = (k: Exclude<keyof DmFigures, "latencyCpu" | "throughputCpu">) => xs.reduce((a, x) => a + x[k], 0) / xs.length;
    const avgCpu = (k: "latencyCpu" | "throughputCpu"): CpuPerMessage => ({
      cotal: xs.reduce((a, x) => a + x[k].cotal, 0) / xs.length,
      raw: xs.reduce((a, x) => a + x[k].raw, 0) / xs.length,
    });
    return {
      latencyCpu: avgCpu("latencyCpu"),
      throughputCpu: avgCpu("throughputCpu"),
      replicas: xs[0]!.replicas,
      p50: avg("p50"),
      p99: avg("p99"),
      throughput: avg("throughput"),
      rawP50: avg("rawP50"),
      rawThroughput: avg("rawThroughput"),
    };
  };
  const one = mean(runs["one node"]!);
  const three = mean(runs["3-node cluster"]!);
  step(`one node: server memory for ${plan.seats} joined seats, then ${plan.consumers} durable consumers`);
  const mem = await perResource(plan, td);

  const raw = "raw: the raw client on the same servers, its stream replicated as Cotal's (R3 on the cluster)";
  const rows: Row[] = [
    { name: "DM latency p50, one node", unit: "ms", cotal: one.p50, raw: one.rawP50, better: "lower", note: raw, cpu: one.latencyCpu },
    { name: "DM latency p50, 3-node cluster R3", unit: "ms", cotal: three.p50, raw: three.rawP50, better: "lower", cpu: three.latencyCpu },
    { name: "DM throughput, one node", unit: "msg/s", cotal: one.throughput, raw: one.rawThroughput, better: "higher", cpu: one.throughputCpu },
    {
      name: "DM throughput, 3-node cluster R3",
      unit: "msg/s",
      cotal: three.throughput,
      raw: three.rawThroughput,
      better: "higher",
      cpu: three.throughputCpu,
      note: "cpu/msg: the bench process and all three nodes",
    },
  ];
  const lines = [
    "| measure | one node (R1) | 3-node cluster (R3) | cluster ÷ one node |",
    "|---|---:|---:|---:|",
    `| DM latency p50, ms | ${fmt(one.p50)} | ${fmt(three.p50)} | ${fmt(three.p50 / one.p50)} |`,
    `| DM latency p99, ms | ${fmt(one.p99)} | ${fmt(three.p99)} | ${fmt(three.p99 / one.p99)} |`,
    `| DM throughput, msg/s | ${fmt(one.throughput)} | ${fmt(three.throughput)} | ${fmt(three.throughput / one.throughput)} |`,
    `| raw client (stream as Cotal's) latency p50, ms | ${fmt(one.rawP50)} | ${fmt(three.rawP50)} | ${fmt(three.rawP50 / one.rawP50)} |`,
    `| raw client (stream as Cotal's) throughput, msg/s | ${fmt(one.rawThroughput)} | ${fmt(three.rawThroughput)} | ${fmt(three.rawThroughput / one.rawThroughput)} |`,
    `| stream replicas seen | ${one.replicas} | ${three.replicas} | |`,
    "",
    `server memory per durable consumer: ${fmt(mem.consumerKiB)} KiB (${plan.consumers} consumers)`,
    `server memory per joined seat (DM durable, presence, control): ${fmt(mem.seatKiB)} KiB (${plan.seats} seats)`,
  ];
  return { rows, lines, tallies, detail: { one, three, runs, memory: mem } };
}

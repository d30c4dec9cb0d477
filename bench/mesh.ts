// The mesh bench (`node dist/bench.mjs`): a private nats-server (never the shared one), a space
// provisioned by the mesh service, and each Cotal figure beside the raw NATS client doing the
// same operation in the same run: DM latency and throughput, fan-out to durable members, the
// event plane, presence as the mesh grows, and what durability costs.
import { connect } from "@nats-io/transport-node";
import { MeshService } from "../broker/index.js";
import { DELIVERY } from "../schemas/index.js";
import { NatsServer } from "../testbed/nats-server.js";
import { under, type Tallies } from "./checks.js";
import { Scope, unconfirmedNote } from "./context.js";
import { dmLatency, type DmLatencyOptions } from "./dm-latency.js";
import { dmThroughput, type DmThroughputOptions } from "./dm-throughput.js";
import { eventPlane, type EventPlanePlan } from "./event-plane.js";
import { fanout, type FanoutOptions } from "./fanout.js";
import { presenceScale, type PresenceOptions } from "./presence.js";
import { fmt, type BenchReport, type BenchRun, type Row } from "./report.js";
import { syncCost, TIMER_SYNC, type SyncCostOptions, type SyncSide } from "./sync-cost.js";

export const MESH_PARTS = ["latency", "throughput", "fanout", "events", "presence", "sync"] as const;
export type MeshPart = (typeof MESH_PARTS)[number];

export interface MeshPlan {
  /** The parts to run, in this order. */
  parts: readonly MeshPart[];
  latency: DmLatencyOptions;
  throughput: DmThroughputOptions;
  fanout: FanoutOptions;
  events: EventPlanePlan;
  presence: PresenceOptions;
  sync: SyncCostOptions;
}

/** Counts per part: `full` keeps a 2-core machine at a few minutes, `quick` (BENCH_QUICK=1) under one, `smoke` (the test suite) at seconds. */
export const MESH_PLANS: Record<"full" | "quick" | "smoke", MeshPlan> = {
  full: {
    parts: MESH_PARTS,
    latency: { samples: 5_000, warmup: 500, blocks: 10 },
    throughput: { messages: 20_000, warmup: 2_000, inflight: 256, rounds: 4 },
    // The idle window spans one quiet pull's whole life, so its ending 408 is counted, not computed.
    fanout: { members: 50, posts: 500, warmup: 50, blocks: 10, idleMs: DELIVERY.quietPullExpiresMs + 5_000 },
    events: { turns: 2_000, warmup: 500, blocks: 4, hooks: 500 },
    presence: { sizes: [10, 50, 100, 200], beats: 3, latencySamples: 500, simulated: [10, 100, 500] },
    sync: {
      throughput: { messages: 10_000, warmup: 1_000, inflight: 256, rounds: 2 },
      fanout: { members: 50, posts: 200, warmup: 20, blocks: 4 },
    },
  },
  quick: {
    parts: MESH_PARTS,
    latency: { samples: 300, warmup: 50, blocks: 2 },
    throughput: { messages: 4_000, warmup: 500, inflight: 256, rounds: 2 },
    fanout: { members: 50, posts: 40, warmup: 5, blocks: 2 },
    events: { turns: 200, warmup: 50, blocks: 2, hooks: 100 },
    presence: { sizes: [10, 50], beats: 2, latencySamples: 100, simulated: [100] },
    sync: {
      throughput: { messages: 2_000, warmup: 200, inflight: 256, rounds: 2 },
      fanout: { members: 20, posts: 20, warmup: 5, blocks: 2 },
    },
  },
  smoke: {
    parts: MESH_PARTS,
    latency: { samples: 20, warmup: 5, blocks: 2 },
    throughput: { messages: 60, warmup: 10, inflight: 16, rounds: 2 },
    fanout: { members: 5, posts: 6, warmup: 2, blocks: 2, idleMs: 200 },
    events: { turns: 10, warmup: 2, blocks: 2, hooks: 10 },
    presence: { sizes: [3], beats: 1, latencySamples: 10, simulated: [5], heartbeatMs: 250 },
    sync: {
      throughput: { messages: 40, warmup: 4, inflight: 16, rounds: 2 },
      fanout: { members: 3, posts: 4, warmup: 1, blocks: 2, idleMs: 100 },
    },
  },
};

/** The parts BENCH_ONLY names (comma-separated), or all. */
export function meshParts(only: string | undefined): MeshPart[] {
  if (!only) return [...MESH_PARTS];
  const picked = only.split(",").map((s) => s.trim());
  const bad = picked.filter((p) => !(MESH_PARTS as readonly string[]).includes(p));
  if (bad.length) throw new Error(`BENCH_ONLY names unknown benchmarks ${bad.join(", ")}; choose from ${MESH_PARTS.join(", ")}`);
  return picked as MeshPart[];
}

const SPACE = "bench";

export async function meshBench(plan: MeshPlan, { td, step }: BenchRun): Promise<BenchReport> {
  // Measured as users run it: `cotal up` renders sync_interval: always (the sync part compares the timer).
  const server = await NatsServer.start({ jetstream: { maxMemoryStore: "256MB", maxFileStore: "16GB", syncInterval: "always" } });
  td.defer(() => server.cleanup());
  const serviceNc = await connect({ servers: server.url, name: "bench-mesh-service", maxReconnectAttempts: -1, reconnectTimeWait: 250 });
  td.defer(() => serviceNc.close());
  const service = await MeshService.start(serviceNc, SPACE);
  td.defer(() => service.stop());
  const root = new Scope(server.url, SPACE, server.pid ? [server.pid] : []);
  td.defer(() => root.close());
  step(`nats-server pid ${server.pid} on ${server.url}; space ${SPACE} provisioned`);

  const rows: Row[] = [];
  const detail: Record<string, unknown> = {};
  let tallies: Tallies = {};
  const which = new Set(plan.parts);

  if (which.has("latency")) {
    const p = plan.latency;
    step(`DM latency: ${p.samples} sequential DMs per side after ${p.warmup} warm-up`);
    const r = await dmLatency(root, p);
    const note = `${p.samples} samples each; send → recipient holds it${unconfirmedNote(r.unconfirmed)}`;
    rows.push({ name: "DM latency p50", unit: "ms", cotal: r.cotal.p50, raw: r.raw.p50, better: "lower", note, cpu: r.cpu });
    rows.push({ name: "DM latency p99", unit: "ms", cotal: r.cotal.p99, raw: r.raw.p99, better: "lower", cpu: r.cpu });
    tallies = { ...tallies, ...under("latency", r.tallies) };
    detail.latency = r;
  }
  if (which.has("throughput")) {
    const p = plan.throughput;
    step(`DM throughput: ${p.messages} DMs per side, ${p.inflight} publishes in flight`);
    const r = await dmThroughput(root, p);
    rows.push({
      name: "DM throughput",
      unit: "msg/s",
      cotal: r.cotal,
      raw: r.raw,
      better: "higher",
      note: `${p.messages} DMs each, ${p.inflight} in flight, until all received and acked; duplicates seen: ${r.duplicates}${unconfirmedNote(r.unconfirmed)}`,
      cpu: r.cpu,
    });
    rows.push({
      name: "DM throughput vs raw+ackAck",
      unit: "msg/s",
      cotal: r.cotal,
      raw: r.rawAckAck,
      better: "higher",
      note: "raw client acking with ackAck(), the confirmed ack Cotal's Delivery.ack() uses",
      cpu: r.cpuAckAck,
    });
    tallies = { ...tallies, ...under("throughput", r.tallies) };
    detail.throughput = r;
  }
  if (which.has("fanout")) {
    const p = plan.fanout;
    step(`fan-out: ${p.posts} posts per side to ${p.members} durable members`);
    const r = await fanout(root, p);
    const note =
      `${p.posts} posts each to ${p.members} members, send → last member holds it; setup ${r.setupSeconds.cotal.toFixed(1)} s Cotal, ` +
      `${r.setupSeconds.raw.toFixed(1)} s raw${unconfirmedNote(r.unconfirmed)}`;
    const cpu = r.cpu;
    rows.push({ name: `fan-out to ${p.members}, all p50`, unit: "ms", cotal: r.cotalAll.p50, raw: r.rawAll.p50, better: "lower", note, cpu });
    rows.push({ name: `fan-out to ${p.members}, all p99`, unit: "ms", cotal: r.cotalAll.p99, raw: r.rawAll.p99, better: "lower", cpu });
    rows.push({
      name: `fan-out to ${p.members}, first p50`,
      unit: "ms",
      cotal: r.cotalFirst.p50,
      raw: r.rawFirst.p50,
      better: "lower",
      note: "send → first member holds it; cpu/msg: per post, to every member",
      cpu,
    });
    rows.push({
      name: `fan-out to ${p.members}, all p50 vs raw+ackAck`,
      unit: "ms",
      cotal: r.cotalAll.p50,
      raw: r.rawAckAckAll.p50,
      better: "lower",
      note: "raw members acking with ackAck(), as Cotal's Delivery.ack() does",
      cpu: r.cpuAckAck,
    });
    rows.push({
      name: `inbound to ${p.members} idle members`,
      unit: "msg/s",
      cotal: r.idleInboundPerSecond.cotal,
      raw: r.idleInboundPerSecond.raw,
      better: "lower",
      note:
        `all member connections together while nobody posts, over ${(p.idleMs ?? 2_000) / 1000} s (goal 0). Cotal: 2 durables each, ` +
        `on one server read with quiet pulls: no keepalive, one 408 per durable every ${DELIVERY.quietPullExpiresMs / 1000} s, ` +
        `${((p.members * 2) / (DELIVERY.quietPullExpiresMs / 1000)).toFixed(2)} msg/s among ${p.members} over the long run, which a short window may miss ` +
        `(a cluster's or leaf host's pulls renew every ${DELIVERY.pullExpiresMs / 1000} s); raw: 1 each, nats.js's consume() with its 30 s pulls and 15 s heartbeats`,
    });
    rows.push({
      name: `inbound to ${p.members} idle members, not pull keepalives`,
      unit: "msg/s",
      cotal: r.idleOtherPerSecond.cotal,
      raw: r.idleOtherPerSecond.raw,
      better: "lower",
      note: "presence, beats, messages: what a peer's idleness costs a member (goal 0)",
    });
    tallies = { ...tallies, ...under("fanout", r.tallies) };
    detail.fanout = r;
  }
  if (which.has("events")) {
    const p = plan.events;
    step(`event plane: ${p.turns} transcript turns published and rendered; ${p.hooks} PreToolUse hooks per side`);
    const r = await eventPlane(root, p);
    rows.push({
      name: "event frames published, one seat",
      unit: "frames/s",
      cotal: r.publish.cotal,
      raw: r.publish.raw,
      better: "higher",
      note: `${r.publish.frames} frames (${r.publish.events} events) after ${p.warmup} turns' warm-up, ${p.blocks} blocks a side: transcript → WAL → ordered publishes; raw publishes the same bytes in order with the same expected-sequence header; cpu/msg: per frame, published and rendered by a console`,
      cpu: r.publish.cpu,
    });
    rows.push({
      name: "event frames published vs raw+same work",
      unit: "frames/s",
      cotal: r.publish.cotal,
      raw: r.publish.rawSameWork,
      better: "higher",
      note: "raw also reading and parsing the transcript, writing each frame to a WAL before its publish and the ack after, naming it by its SHA-256 and checking the envelope's schema: what is left is the plane's mapper, framing and endpoint",
      cpu: r.publish.cpuSameWork,
    });
    rows.push({
      name: "event frames rendered, one console",
      unit: "frames/s",
      cotal: r.render.cotal,
      raw: r.render.raw,
      better: "higher",
      note: "the same ordered publishes read by cotal console's feed (envelope and frame checks, timeline lines) vs a raw subscriber parsing the JSON, publish start → last frame handled",
    });
    rows.push({
      name: "PreToolUse relay p50, plane on vs off",
      unit: "ms",
      cotal: r.hook.planeOn.p50,
      raw: r.hook.planeOff.p50,
      better: "lower",
      note: `the same seat with the plane busy vs COTAL_EVENTS=off (raw column); p99 ${fmt(r.hook.planeOn.p99)} vs ${fmt(r.hook.planeOff.p99)} ms`,
    });
    tallies = { ...tallies, ...under("events", r.tallies) };
    detail.events = r;
  }
  if (which.has("presence")) {
    const p = plan.presence;
    step(`presence: ${p.sizes.join("/")} joined idle endpoints, ${p.beats} heartbeats each; ${p.simulated.join("/")} simulated`);
    const r = await presenceScale(root, [serviceNc, service.beatsConnection], p);
    const before = "raw column: what protocol 0.2 cost (every endpoint received every heartbeat: N per heartbeat), computed, not measured";
    for (const s of r.sizes) {
      rows.push({
        name: `presence msgs/endpoint/s, ${s.endpoints} joined`,
        unit: "msg/s",
        cotal: s.perEndpoint,
        raw: s.before,
        better: "lower",
        note:
          `${fmt(s.toEndpoints)} of it reaches the endpoints, ${fmt(s.toEndpointsOther)} besides their DM pulls' keepalives ` +
          `(the rest: beats to the mesh service); ${before}`,
      });
      tallies[`presence ${s.endpoints} joined`] = s.joined;
      if (s.latency) {
        rows.push({
          name: `DM latency p50, ${s.endpoints} joined`,
          unit: "ms",
          cotal: s.latency.cotal.p50,
          raw: s.latency.raw.p50,
          better: "lower",
          note: `p99 ${fmt(s.latency.cotal.p99)} vs ${fmt(s.latency.raw.p99)} ms`,
          cpu: s.latency.cpu,
        });
        tallies = { ...tallies, ...under(`presence ${s.endpoints} latency`, s.latency.tallies) };
      }
    }
    for (const s of r.simulated) {
      rows.push({
        name: `presence msgs/endpoint/s, ${s.endpoints} simulated`,
        unit: "msg/s",
        cotal: s.perEndpoint,
        raw: s.before,
        better: "lower",
        note: `bare beating connections + 5 joined watchers; a watcher receives ${fmt(s.toWatchers)} msg/s, ${fmt(s.toWatchersOther)} besides its DM pull's keepalives; ${before}`,
      });
      tallies[`presence ${s.endpoints} simulated`] = s.joined;
    }
    detail.presence = r;
  }
  if (which.has("sync")) {
    const p = plan.sync;
    step(`durability: DM throughput and fan-out to ${p.fanout.members} on a server with sync_interval always, then one with ${TIMER_SYNC}`);
    const r = await syncCost(SPACE, p);
    const side = (s: SyncSide) =>
      `${s.sync}: Cotal ${fmt(s.throughput.cotal)} msg/s, raw ${fmt(s.throughput.raw)} msg/s (${fmt(s.throughput.cotal / s.throughput.raw)}× raw)`;
    rows.push({
      name: `DM throughput, sync always vs ${TIMER_SYNC}`,
      unit: "msg/s",
      cotal: r.always.throughput.cotal,
      raw: r.timer.throughput.cotal,
      better: "higher",
      note: `Cotal on both; raw column: the ${TIMER_SYNC} timer (cotal up --sync ${TIMER_SYNC}); ${side(r.always)}; ${side(r.timer)}`,
      cpu: { cotal: r.always.throughput.cpu.cotal, raw: r.timer.throughput.cpu.cotal },
    });
    rows.push({
      name: `raw DM throughput, sync always vs ${TIMER_SYNC}`,
      unit: "msg/s",
      cotal: r.always.throughput.raw,
      raw: r.timer.throughput.raw,
      better: "higher",
      note: "the raw client on both servers: what fsync costs JetStream itself",
      cpu: { cotal: r.always.throughput.cpu.raw, raw: r.timer.throughput.cpu.raw },
    });
    rows.push({
      name: `fan-out to ${p.fanout.members}, all p50, sync always vs ${TIMER_SYNC}`,
      unit: "ms",
      cotal: r.always.fanout.cotalAll.p50,
      raw: r.timer.fanout.cotalAll.p50,
      better: "lower",
      note: `raw client: ${fmt(r.always.fanout.rawAll.p50)} ms always vs ${fmt(r.timer.fanout.rawAll.p50)} ms ${TIMER_SYNC}`,
      cpu: { cotal: r.always.fanout.cpu.cotal, raw: r.timer.fanout.cpu.cotal },
    });
    for (const s of [r.always, r.timer]) {
      tallies = { ...tallies, ...under(`sync ${s.sync} throughput`, s.throughput.tallies), ...under(`sync ${s.sync} fanout`, s.fanout.tallies) };
    }
    detail.sync = r;
  }
  return { rows, lines: [], tallies, detail };
}

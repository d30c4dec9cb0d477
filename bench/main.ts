// Entry of `npm run bench`: starts a private nats-server (never the shared one), provisions a
// space with the mesh service, and prints each Cotal figure beside the raw NATS client's doing
// the same operation in the same run, with their ratio. BENCH_QUICK=1 runs smaller counts;
// BENCH_ONLY=latency,throughput,fanout picks benchmarks; BENCH_JSON=<file> also writes JSON.
import { execFileSync } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { cpus, loadavg } from "node:os";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { MeshService } from "../broker/index.js";
import { findNatsServer, NatsServer } from "../testbed/nats-server.js";
import { Scope, now } from "./context.js";
import { dmLatency } from "./dm-latency.js";
import { dmThroughput } from "./dm-throughput.js";
import { eventPlane } from "./event-plane.js";
import { fanout } from "./fanout.js";
import { presenceScale } from "./presence.js";
import { fmt, renderMarkdown, renderTable, type Row } from "./report.js";

// Components log at info to stderr; a benchmark only wants warnings and errors.
process.env.COTAL_LOG_LEVEL ??= "warn";

const QUICK = process.env.BENCH_QUICK === "1";
const SPACE = "bench";

/** Counts per benchmark; the full set keeps a 2-core machine under ~3 minutes. */
const PLAN = QUICK
  ? {
      latency: { samples: 300, warmup: 50, blocks: 2 },
      throughput: { messages: 4_000, warmup: 500, inflight: 256, rounds: 2 },
      fanout: { members: 50, posts: 40, warmup: 5, blocks: 2 },
      events: { turns: 200, hooks: 100 },
      presence: { sizes: [10, 50], beats: 2, latencySamples: 100, simulated: [100] },
    }
  : {
      latency: { samples: 5_000, warmup: 500, blocks: 10 },
      throughput: { messages: 20_000, warmup: 2_000, inflight: 256, rounds: 4 },
      fanout: { members: 50, posts: 500, warmup: 50, blocks: 10 },
      events: { turns: 2_000, hooks: 500 },
      presence: { sizes: [50, 100, 200], beats: 3, latencySamples: 500, simulated: [10, 100, 500] },
    };

const ALL = ["latency", "throughput", "fanout", "events", "presence"] as const;
type BenchName = (typeof ALL)[number];

function selected(): Set<BenchName> {
  const only = process.env.BENCH_ONLY;
  if (!only) return new Set(ALL);
  const picked = only.split(",").map((s) => s.trim());
  const bad = picked.filter((p) => !(ALL as readonly string[]).includes(p));
  if (bad.length) throw new Error(`BENCH_ONLY names unknown benchmarks ${bad.join(", ")}; choose from ${ALL.join(", ")}`);
  return new Set(picked as BenchName[]);
}

function machine(bin: string): string {
  let version = "unknown";
  try {
    version = execFileSync(bin, ["--version"], { encoding: "utf8" }).trim();
  } catch {
    // keep "unknown"
  }
  const cpu = cpus();
  return `${cpu.length} × ${cpu[0]?.model ?? "cpu"}, Node ${process.version}, ${version}, loopback${QUICK ? ", BENCH_QUICK=1" : ""}`;
}

async function main(): Promise<number> {
  const which = selected();
  const bin = findNatsServer();
  console.log(`cotal bench: ${machine(bin)}`);
  const load = loadavg()[0] ?? 0;
  if (load > 0.7)
    console.log(`note: the 1-minute load average is ${load.toFixed(2)} before start; recent work on this machine (an earlier run too) may skew the figures`);
  const started = now();

  let server: NatsServer | undefined;
  let serviceNc: NatsConnection | undefined;
  let service: MeshService | undefined;
  let root: Scope | undefined;
  let interrupted = false;
  const cleanup = async () => {
    await root?.close();
    await service?.stop().catch(() => undefined);
    await serviceNc?.close().catch(() => undefined);
    await server?.cleanup();
  };
  const onSignal = (sig: NodeJS.Signals) => {
    if (interrupted) return;
    interrupted = true;
    console.error(`\n${sig}: stopping the benchmark's nats-server`);
    void cleanup().finally(() => process.exit(130));
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);

  try {
    server = await NatsServer.start({ jetstream: { maxMemoryStore: "256MB", maxFileStore: "16GB" } });
    serviceNc = await connect({ servers: server.url, name: "bench-mesh-service", maxReconnectAttempts: -1, reconnectTimeWait: 250 });
    service = await MeshService.start(serviceNc, SPACE);
    root = new Scope(server.url, SPACE);
    console.log(`nats-server pid ${server.pid} on ${server.url}; space ${SPACE} provisioned\n`);

    const rows: Row[] = [];
    const extra: Record<string, unknown> = {};
    const step = (what: string) => console.log(`[${((now() - started) / 1000).toFixed(1)} s] ${what}`);

    if (which.has("latency")) {
      const p = PLAN.latency;
      step(`DM latency: ${p.samples} sequential DMs per side after ${p.warmup} warm-up`);
      const r = await dmLatency(root, p);
      const note = `${p.samples} samples each; send → recipient holds it`;
      rows.push({ name: "DM latency p50", unit: "ms", cotal: r.cotal.p50, raw: r.raw.p50, better: "lower", note });
      rows.push({ name: "DM latency p99", unit: "ms", cotal: r.cotal.p99, raw: r.raw.p99, better: "lower" });
      extra.latency = r;
    }
    if (which.has("throughput")) {
      const p = PLAN.throughput;
      step(`DM throughput: ${p.messages} DMs per side, ${p.inflight} publishes in flight`);
      const r = await dmThroughput(root, p);
      rows.push({
        name: "DM throughput",
        unit: "msg/s",
        cotal: r.cotal,
        raw: r.raw,
        better: "higher",
        note: `${p.messages} DMs each, ${p.inflight} in flight, until all received and acked; duplicates seen: ${r.duplicates}`,
      });
      rows.push({
        name: "DM throughput vs raw+ackAck",
        unit: "msg/s",
        cotal: r.cotal,
        raw: r.rawAckAck,
        better: "higher",
        note: "raw client acking with ackAck(), the confirmed ack Cotal's Delivery.ack() uses",
      });
      extra.throughput = r;
    }
    if (which.has("fanout")) {
      const p = PLAN.fanout;
      step(`fan-out: ${p.posts} posts per side to ${p.members} durable members`);
      const r = await fanout(root, p);
      const note =
        `${p.posts} posts each to ${p.members} members, send → last member holds it; setup ${r.setupSeconds.cotal.toFixed(1)} s Cotal, ` +
        `${r.setupSeconds.raw.toFixed(1)} s raw; idle inbound to members ${fmt(r.idleInboundPerSecond.cotal)} msg/s Cotal, ${fmt(r.idleInboundPerSecond.raw)} msg/s raw`;
      rows.push({ name: `fan-out to ${p.members}, all p50`, unit: "ms", cotal: r.cotalAll.p50, raw: r.rawAll.p50, better: "lower", note });
      rows.push({ name: `fan-out to ${p.members}, all p99`, unit: "ms", cotal: r.cotalAll.p99, raw: r.rawAll.p99, better: "lower" });
      rows.push({
        name: `fan-out to ${p.members}, first p50`,
        unit: "ms",
        cotal: r.cotalFirst.p50,
        raw: r.rawFirst.p50,
        better: "lower",
        note: "send → first member holds it",
      });
      rows.push({
        name: `fan-out to ${p.members}, all p50 vs raw+ackAck`,
        unit: "ms",
        cotal: r.cotalAll.p50,
        raw: r.rawAckAckAll.p50,
        better: "lower",
        note: "raw members acking with ackAck(), as Cotal's Delivery.ack() does",
      });
      extra.fanout = r;
    }

    if (which.has("events")) {
      const p = PLAN.events;
      step(`event plane: ${p.turns} transcript turns published and rendered; ${p.hooks} PreToolUse hooks per side`);
      const r = await eventPlane(root, p);
      rows.push({
        name: "event frames published, one seat",
        unit: "frames/s",
        cotal: r.publish.cotal,
        raw: r.publish.raw,
        better: "higher",
        note: `${r.publish.frames} frames (${r.publish.events} events): transcript → WAL → ordered publishes; raw publishes the same bytes in order with the same expected-sequence header`,
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
      extra.events = r;
    }

    if (which.has("presence")) {
      const p = PLAN.presence;
      step(`presence: ${p.sizes.join("/")} joined idle endpoints, ${p.beats} heartbeats each; ${p.simulated.join("/")} simulated`);
      const r = await presenceScale(root, serviceNc, p);
      const before = "raw column: what protocol 0.2 cost (every endpoint received every heartbeat: N per 2 s), computed, not measured";
      for (const s of r.sizes) {
        rows.push({
          name: `presence msgs/endpoint/s, ${s.endpoints} joined`,
          unit: "msg/s",
          cotal: s.perEndpoint,
          raw: s.before,
          better: "lower",
          note: `${fmt(s.toEndpoints)} of it reaches the endpoints (the rest: beats to the mesh service); ${before}`,
        });
        if (s.latency)
          rows.push({
            name: `DM latency p50, ${s.endpoints} joined`,
            unit: "ms",
            cotal: s.latency.cotal.p50,
            raw: s.latency.raw.p50,
            better: "lower",
            note: `p99 ${fmt(s.latency.cotal.p99)} vs ${fmt(s.latency.raw.p99)} ms`,
          });
      }
      for (const s of r.simulated) {
        rows.push({
          name: `presence msgs/endpoint/s, ${s.endpoints} simulated`,
          unit: "msg/s",
          cotal: s.perEndpoint,
          raw: s.before,
          better: "lower",
          note: `bare beating connections + 5 joined watchers; a watcher receives ${fmt(s.toWatchers)} msg/s; ${before}`,
        });
      }
      extra.presence = r;
    }

    step("done");
    console.log(`\n${renderTable(rows)}\n`);
    if (process.env.BENCH_JSON) {
      const out = { machine: machine(bin), quick: QUICK, plan: PLAN, rows, detail: extra, markdown: renderMarkdown(rows) };
      await writeFile(process.env.BENCH_JSON, JSON.stringify(out, null, 2) + "\n");
      console.log(`wrote ${process.env.BENCH_JSON}`);
    }
    return 0;
  } catch (err) {
    if (interrupted) return 130; // closing connections under a running benchmark fails it; not news
    console.error("benchmark failed:", err);
    if (server) console.error(`--- last nats-server output ---\n${server.logs().split("\n").slice(-20).join("\n")}`);
    return 1;
  } finally {
    if (!interrupted) await cleanup();
  }
}

process.exitCode = await main();

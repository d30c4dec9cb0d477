// Presence traffic as the mesh grows (issue #15): N idle joined endpoints, nothing changing; every
// message their connections and the mesh service's connection receive over a few heartbeats,
// per endpoint per second. Protocol 0.3 sends one beat per endpoint per heartbeat to the mesh
// service alone, so the figure stays flat; before it, every endpoint received every endpoint's
// heartbeat (N per heartbeat per endpoint). Also: DM latency with those N endpoints joined, and
// "simulated" endpoints (bare connections that beat and hold a presence key, no consumers) to
// reach sizes one process cannot join for real.
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { Kvm } from "@nats-io/kv";
import type { Endpoint } from "../broker/index.js";
import { beatSubject, localPrincipal, names, PRESENCE, type Presence, type PresenceBeat } from "../schemas/index.js";
import { dmLatency } from "./dm-latency.js";
import { now, runBounded, type Scope } from "./context.js";
import type { Summary } from "./stats.js";

export interface PresenceOptions {
  /** Joined endpoint counts, measured in this order (the mesh grows between them). */
  sizes: number[];
  /** Heartbeats per measuring window. */
  beats: number;
  /** DM latency samples at each size (0: skip). */
  latencySamples: number;
  /** Simulated endpoint counts (bare beating connections plus real watchers). */
  simulated: number[];
}

export interface PresenceSize {
  endpoints: number;
  /** Messages received per endpoint per second, all connections (endpoints + mesh service) counted. */
  perEndpoint: number;
  /** Of which received by the endpoints themselves (what used to grow with N). */
  toEndpoints: number;
  /** What protocol 0.2 cost at this size: N heartbeats per heartbeat period reach every endpoint. */
  before: number;
  latency?: { cotal: Summary; raw: Summary };
}

export interface PresenceResult {
  sizes: PresenceSize[];
  simulated: Array<{ endpoints: number; perEndpoint: number; toWatchers: number; before: number }>;
}

const JOIN_LANES = 10;
const inbound = (conns: NatsConnection[]) => conns.reduce((sum, nc) => sum + nc.stats().inMsgs, 0);

async function window(conns: NatsConnection[], watchers: NatsConnection[], ms: number): Promise<{ all: number; watchers: number; seconds: number }> {
  const a0 = inbound(conns);
  const w0 = inbound(watchers);
  const t0 = now();
  await new Promise((r) => setTimeout(r, ms));
  const seconds = (now() - t0) / 1000;
  return { all: inbound(conns) - a0, watchers: inbound(watchers) - w0, seconds };
}

export async function presenceScale(parent: Scope, service: NatsConnection, opts: PresenceOptions): Promise<PresenceResult> {
  const scope = parent.child();
  const periodS = PRESENCE.heartbeatMs / 1000;
  try {
    const eps: Endpoint[] = [];
    const sizes: PresenceSize[] = [];
    for (const n of opts.sizes) {
      const start = eps.length;
      await runBounded(n - start, JOIN_LANES, async (i) => void eps.push((await scope.joined(`pres_${String(start + i).padStart(3, "0")}`)).ep));
      // Let the joins' own writes settle: one heartbeat.
      await new Promise((r) => setTimeout(r, PRESENCE.heartbeatMs));
      const w = await window(
        [...eps.map((e) => e.nc), service],
        eps.map((e) => e.nc),
        opts.beats * PRESENCE.heartbeatMs,
      );
      const size: PresenceSize = { endpoints: n, perEndpoint: w.all / n / w.seconds, toEndpoints: w.watchers / n / w.seconds, before: n / periodS };
      if (opts.latencySamples > 0)
        size.latency = await dmLatency(scope, { samples: opts.latencySamples, warmup: Math.ceil(opts.latencySamples / 10), blocks: 2 });
      sizes.push(size);
    }
    await scope.close();
    const simulated = [];
    for (const n of opts.simulated) simulated.push(await simulate(parent, service, n, opts.beats));
    return { sizes, simulated };
  } finally {
    await scope.close();
  }
}

/**
 * N bare connections, each writing one presence key once and then beating like an endpoint,
 * plus 5 joined endpoints as watchers: what a watcher and the mesh service receive per second.
 */
async function simulate(parent: Scope, service: NatsConnection, n: number, beats: number): Promise<PresenceResult["simulated"][number]> {
  const scope = parent.child();
  try {
    const conns: NatsConnection[] = [];
    await runBounded(n, JOIN_LANES * 2, async (i) => {
      const nc = await connect({ servers: scope.url, name: `bench-sim-${i}`, noAsyncTraces: true });
      scope.defer(() => nc.close());
      conns.push(nc);
      const who = localPrincipal(`sim_${String(i).padStart(4, "0")}`);
      const id = `${who.owner}.${who.actor}`;
      const presence: Presence = {
        card: { id, name: who.actor, kind: "endpoint", tags: [], meta: {} },
        status: "idle",
        ts: Date.now(),
        attention: "open",
        channelModes: {},
        channels: [],
      };
      const kv = await new Kvm(nc).open(names.presenceBucket(scope.space), { bindOnly: true });
      await kv.put(id, JSON.stringify(presence));
      const timer = setInterval(
        () => nc.publish(beatSubject(scope.space, who), JSON.stringify({ ts: Date.now(), presence } satisfies PresenceBeat)),
        PRESENCE.heartbeatMs,
      );
      timer.unref();
      scope.defer(async () => clearInterval(timer));
    });
    const watchers: NatsConnection[] = [];
    for (let i = 0; i < 5; i++) watchers.push((await scope.joined(`sim_watch${i}`)).ep.nc);
    await new Promise((r) => setTimeout(r, PRESENCE.heartbeatMs));
    const w = await window([...conns, ...watchers, service], watchers, beats * PRESENCE.heartbeatMs);
    const total = n + watchers.length;
    return {
      endpoints: n,
      perEndpoint: w.all / total / w.seconds,
      toWatchers: w.watchers / watchers.length / w.seconds,
      before: total / (PRESENCE.heartbeatMs / 1000),
    };
  } finally {
    await scope.close();
  }
}

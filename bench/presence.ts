// Presence traffic as the mesh grows: N idle joined endpoints, nothing changing; every
// message their connections and the mesh service's connection receive over a few heartbeats,
// per endpoint per second. Protocol 0.3 sends one beat per endpoint per heartbeat to the mesh
// service alone, so the figure stays flat; before it, every endpoint received every endpoint's
// heartbeat (N per heartbeat per endpoint). Also: DM latency with those N endpoints joined, and
// "simulated" endpoints (bare connections that beat and hold a presence key, no consumers) to
// reach sizes one process cannot join for real.
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { Kvm } from "@nats-io/kv";
import { Endpoint } from "../broker/index.js";
import { beatSubject, localPrincipal, names, PRESENCE, type Presence, type PresenceBeat } from "../schemas/index.js";
import type { Tally } from "./checks.js";
import { dmLatency, type DmLatencyResult } from "./dm-latency.js";
import { now, runBounded, type Scope } from "./context.js";
import { tapInbound, type WireTap } from "./wire-tap.js";

export interface PresenceOptions {
  /** Joined endpoint counts, measured in this order (the mesh grows between them). */
  sizes: number[];
  /** Heartbeats per measuring window. */
  beats: number;
  /** DM latency samples at each size (0: skip). */
  latencySamples: number;
  /** Simulated endpoint counts (bare beating connections plus real watchers). */
  simulated: number[];
  /** Heartbeat of every endpoint, joined or simulated, ms (default PRESENCE.heartbeatMs, what endpoints use). */
  heartbeatMs?: number;
}

export interface PresenceSize {
  endpoints: number;
  /** Messages received per endpoint per second, all connections (endpoints + mesh service) counted. */
  perEndpoint: number;
  /** Of which received by the endpoints themselves (what used to grow with N). */
  toEndpoints: number;
  /** Of that, what is not a keepalive of their DM pulls (presence, beats, messages): 0 when idle. */
  toEndpointsOther: number;
  /** What protocol 0.2 cost at this size: N heartbeats per heartbeat period reach every endpoint. */
  before: number;
  latency?: Pick<DmLatencyResult, "cotal" | "raw" | "cpu" | "tallies">;
  /** Endpoints asked to join, and how many a fresh roster view shows online after the window. */
  joined: Tally;
}

export interface PresenceResult {
  sizes: PresenceSize[];
  simulated: Array<{ endpoints: number; perEndpoint: number; toWatchers: number; toWatchersOther: number; before: number; joined: Tally }>;
}

const JOIN_LANES = 10;

/**
 * How many endpoints whose name starts with `prefix` are online on a fresh roster view (the mesh
 * service's snapshot, then the bucket's changes). Read through a connection of its own, after a
 * window, so the view's own traffic is in no window.
 */
async function onRoster(scope: Scope, prefix: string): Promise<number> {
  const watcher = await Endpoint.connect({ server: scope.url, space: scope.space, name: "roster_check" });
  try {
    const roster = await watcher.roster();
    return roster.entries().filter((e) => e.name.startsWith(prefix) && e.status !== "offline").length;
  } finally {
    await watcher.close();
  }
}

const inbound = (conns: NatsConnection[]) => conns.reduce((sum, nc) => sum + nc.stats().inMsgs, 0);

const other = (taps: WireTap[]) => taps.reduce((sum, t) => sum + t.other, 0);

async function window(
  conns: NatsConnection[],
  watchers: NatsConnection[],
  taps: WireTap[],
  ms: number,
): Promise<{ all: number; watchers: number; watchersOther: number; seconds: number }> {
  const a0 = inbound(conns);
  const w0 = inbound(watchers);
  const o0 = other(taps);
  const t0 = now();
  await new Promise((r) => setTimeout(r, ms));
  const seconds = (now() - t0) / 1000;
  return { all: inbound(conns) - a0, watchers: inbound(watchers) - w0, watchersOther: other(taps) - o0, seconds };
}

export async function presenceScale(parent: Scope, services: NatsConnection[], opts: PresenceOptions): Promise<PresenceResult> {
  const scope = parent.child();
  const heartbeatMs = opts.heartbeatMs ?? PRESENCE.heartbeatMs;
  const periodS = heartbeatMs / 1000;
  try {
    const eps: Endpoint[] = [];
    const taps: WireTap[] = [];
    const sizes: PresenceSize[] = [];
    for (const n of opts.sizes) {
      const start = eps.length;
      await runBounded(n - start, JOIN_LANES, async (i) => {
        const { ep } = await scope.joined(`pres_${String(start + i).padStart(3, "0")}`, { heartbeatMs });
        eps.push(ep);
        taps.push(tapInbound(ep.nc));
      });
      // Let the joins' own writes settle: one heartbeat.
      await new Promise((r) => setTimeout(r, heartbeatMs));
      const w = await window(
        [...eps.map((e) => e.nc), ...services],
        eps.map((e) => e.nc),
        taps,
        opts.beats * heartbeatMs,
      );
      const size: PresenceSize = {
        endpoints: n,
        perEndpoint: w.all / n / w.seconds,
        toEndpoints: w.watchers / n / w.seconds,
        toEndpointsOther: w.watchersOther / n / w.seconds,
        before: n / periodS,
        joined: { sent: n, received: await onRoster(scope, "pres_"), duplicates: 0, pending: 0 },
      };
      if (opts.latencySamples > 0)
        size.latency = await dmLatency(scope, { samples: opts.latencySamples, warmup: Math.ceil(opts.latencySamples / 10), blocks: 2 });
      sizes.push(size);
    }
    await scope.close();
    const simulated = [];
    for (const n of opts.simulated) simulated.push(await simulate(parent, services, n, opts.beats, heartbeatMs));
    return { sizes, simulated };
  } finally {
    await scope.close();
  }
}

/**
 * N bare connections, each writing one presence key once and then beating like an endpoint,
 * plus 5 joined endpoints as watchers: what a watcher and the mesh service receive per second.
 */
async function simulate(
  parent: Scope,
  services: NatsConnection[],
  n: number,
  beats: number,
  heartbeatMs: number,
): Promise<PresenceResult["simulated"][number]> {
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
        heartbeatMs,
      );
      timer.unref();
      scope.defer(async () => clearInterval(timer));
    });
    const watchers: NatsConnection[] = [];
    for (let i = 0; i < 5; i++) watchers.push((await scope.joined(`sim_watch${i}`, { heartbeatMs })).ep.nc);
    const taps = watchers.map((nc) => tapInbound(nc));
    await new Promise((r) => setTimeout(r, heartbeatMs));
    const w = await window([...conns, ...watchers, ...services], watchers, taps, beats * heartbeatMs);
    const total = n + watchers.length;
    return {
      endpoints: n,
      perEndpoint: w.all / total / w.seconds,
      toWatchers: w.watchers / watchers.length / w.seconds,
      toWatchersOther: w.watchersOther / watchers.length / w.seconds,
      before: total / (heartbeatMs / 1000),
      joined: { sent: n, received: await onRoster(scope, "sim_0"), duplicates: 0, pending: 0 },
    };
  } finally {
    await scope.close();
  }
}

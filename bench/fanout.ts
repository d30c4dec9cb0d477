// Channel post fan-out to M durable members: the time from one `send` until every member has
// received the post (p50/p99 over sequential posts; each waits until all members acked the
// previous one). Cotal: M joined endpoints in a durable channel (one `ch_` consumer each, made
// by the mesh service). Raw: M connections, each with a durable consumer on the same filter;
// and, to attribute the difference, the same with members acking by ackAck() as Cotal does.
import { randomUUID } from "node:crypto";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Endpoint } from "../broker/index.js";
import { Arrivals, type Tally } from "./checks.js";
import { CpuAccount, type CpuPerMessage } from "./cpu.js";
import {
  addRawConsumer,
  addRawStream,
  consumeRaw,
  STALL_MS,
  endpointPending,
  envelopeLike,
  leftPending,
  now,
  runBounded,
  withTimeout,
  Unconfirmed,
  unconfirmedOf,
  type RawClient,
  type Scope,
  type UnconfirmedAcks,
} from "./context.js";
import { summarize, type Summary } from "./stats.js";
import { tapInbound } from "./wire-tap.js";

export interface FanoutOptions {
  /** Durable members of the channel. */
  members: number;
  /** Measured posts per side. */
  posts: number;
  /** Unmeasured posts per side first. */
  warmup: number;
  /** Alternating blocks (raw, Cotal, Cotal, raw, …) so drift hits both. */
  blocks: number;
  /** Quiet window in which background traffic to the members is counted, ms (default 2 s). */
  idleMs?: number;
}

export interface FanoutResult {
  /** ms from send to the last member holding the post. */
  cotalAll: Summary;
  rawAll: Summary;
  /** ms from send to the first member holding the post. */
  cotalFirst: Summary;
  rawFirst: Summary;
  /** ms from send to the last member holding the post, raw members acking with ackAck(). */
  rawAckAckAll: Summary;
  /** CPU per post (to every member, each acked) over the measured blocks, µs (bench/cpu.ts), beside raw members acking with ack(). */
  cpu: CpuPerMessage;
  /** The same, beside the raw side acking with ackAck(). */
  cpuAckAck: CpuPerMessage;
  /** Seconds spent making the members (connect, join, join channel), per side. */
  setupSeconds: { cotal: number; raw: number };
  /**
   * Messages per second all member connections together receive while no one posts: JetStream's
   * keepalives of their pulls (idle heartbeats and expiries; Cotal's pulls expire every 5 s, raw
   * nats.js's every 30 s) and anything else (presence, beats, messages: `other`, goal 0).
   */
  idleInboundPerSecond: { cotal: number; raw: number };
  /** Of idleInboundPerSecond, what is not a pull keepalive. */
  idleOtherPerSecond: { cotal: number; raw: number };
  /** Per side: member deliveries expected (posts × members, warm-up included), received once each, repeats, left on the members' durables. */
  tallies: { cotal: Tally; raw: Tally; rawAckAck: Tally };
  /** Confirmed acks whose confirmation failed (counted as handled; see Unconfirmed). */
  unconfirmed: UnconfirmedAcks;
}

const CHANNEL = "bench.fanout";
const TEXT = "bench: a channel post of typical size, one line of status for the team";
/** One post to every member; only a post that never completes hits it (a loaded machine is slow, not stuck). */
const POST_TIMEOUT_MS = STALL_MS;
/** Members connected at once during setup. */
const SETUP_CONCURRENCY = 10;
/** Quiet window in which background traffic to the members is counted, by default. */
const IDLE_WINDOW_MS = 2_000;

/** One post in flight: when it was sent and when each member got it. */
class Post {
  readonly receipts: number[] = [];
  acked = 0;
  readonly done: Promise<void>;
  #resolve!: () => void;
  constructor(
    readonly t0: number,
    readonly members: number,
  ) {
    this.done = new Promise((r) => (this.#resolve = r));
  }
  received(): void {
    this.receipts.push(now());
  }
  ackedOne(): void {
    this.acked += 1;
    if (this.acked >= this.members && this.receipts.length >= this.members) this.#resolve();
  }
}

interface Side {
  /** Post once; resolves with [ms to all members, ms to the first]. */
  post(): Promise<[number, number]>;
  /** The members' connections. */
  members: NatsConnection[];
  /** The side's counts, once the members' durables settled. */
  tally(): Promise<Tally>;
  /** Acks that were sent but not confirmed. */
  unconfirmed: Unconfirmed;
}

/** Inbound messages per second on a side's member connections over `ms` with no posts: all, and all but pull keepalives. */
async function idleRate(side: Side, ms: number): Promise<{ all: number; other: number }> {
  const taps = side.members.map((nc) => tapInbound(nc));
  const t0 = now();
  await new Promise((r) => setTimeout(r, ms));
  const seconds = (now() - t0) / 1000;
  for (const t of taps) t.stop(); // the posts are measured untapped
  const all = taps.reduce((sum, t) => sum + t.keepalives + t.other, 0);
  const other = taps.reduce((sum, t) => sum + t.other, 0);
  return { all: all / seconds, other: other / seconds };
}

export async function fanout(parent: Scope, opts: FanoutOptions): Promise<FanoutResult> {
  const scope = parent.child();
  try {
    let t = now();
    const cotal = await cotalSide(scope, opts.members);
    const cotalSetup = (now() - t) / 1000;
    t = now();
    const raw = await rawSide(scope, opts.members, "ack");
    const rawSetup = (now() - t) / 1000;
    const rawAckAck = await rawSide(scope, opts.members, "ackAck");
    const sides = { cotal, raw, rawAckAck };
    const names = ["raw", "cotal", "rawAckAck"] as const;
    for (let i = 0; i < opts.warmup; i++) for (const s of names) await sides[s].post();
    const idleMs = opts.idleMs ?? IDLE_WINDOW_MS;
    const idle = { cotal: await idleRate(cotal, idleMs), raw: await idleRate(raw, idleMs) };
    const all = { cotal: [] as number[], raw: [] as number[], rawAckAck: [] as number[] };
    const first = { cotal: [] as number[], raw: [] as number[], rawAckAck: [] as number[] };
    const cpu = new CpuAccount<(typeof names)[number]>(() => scope.pids, "fanout");
    const perBlock = Math.ceil(opts.posts / opts.blocks);
    for (let b = 0; b < opts.blocks; b++) {
      const n = Math.min(perBlock, opts.posts - b * perBlock);
      const order = b % 2 === 0 ? names : ([...names].reverse() as Array<(typeof names)[number]>);
      for (const side of order) {
        await cpu.measure(side, n, async () => {
          for (let i = 0; i < n; i++) {
            const [a, f] = await sides[side].post();
            all[side].push(a);
            first[side].push(f);
          }
        });
      }
    }
    return {
      cotalAll: summarize(all.cotal),
      rawAll: summarize(all.raw),
      cotalFirst: summarize(first.cotal),
      rawFirst: summarize(first.raw),
      rawAckAckAll: summarize(all.rawAckAck),
      cpu: cpu.pair("cotal", "raw"),
      cpuAckAck: cpu.pair("cotal", "rawAckAck"),
      setupSeconds: { cotal: cotalSetup, raw: rawSetup },
      idleInboundPerSecond: { cotal: idle.cotal.all, raw: idle.raw.all },
      idleOtherPerSecond: { cotal: idle.cotal.other, raw: idle.raw.other },
      tallies: { cotal: await cotal.tally(), raw: await raw.tally(), rawAckAck: await rawAckAck.tally() },
      unconfirmed: unconfirmedOf({ cotal: cotal.unconfirmed, "raw+ackAck": rawAckAck.unconfirmed }),
    };
  } finally {
    await scope.close();
  }
}

function measure(post: Post): [number, number] {
  const sorted = [...post.receipts].sort((a, b) => a - b);
  return [(sorted[sorted.length - 1] as number) - post.t0, (sorted[0] as number) - post.t0];
}

const memberName = (i: number) => `fan_m${String(i).padStart(2, "0")}`;

async function cotalSide(scope: Scope, members: number): Promise<Side> {
  const posts = new Map<string, Post>();
  const memberEps: Endpoint[] = [];
  const arrivals = new Arrivals();
  const unconfirmed = new Unconfirmed();
  let sent = 0;
  const { ep: sender } = await scope.joined("fan_sender");
  const admin = await scope.raw("bench-fan-admin");
  const pump = async (ep: Endpoint) => {
    for await (const d of ep.deliveries) {
      const first = d.kind === "channel" && arrivals.add(`${d.message.id} to ${ep.id}`);
      const post = posts.get(d.message.id);
      if (!post || !first) {
        await d.ack().catch((err: unknown) => unconfirmed.note(err));
        continue;
      }
      post.received();
      d.ack().then(
        () => post.ackedOne(),
        (err: unknown) => {
          unconfirmed.note(err);
          post.ackedOne();
        },
      );
    }
  };
  await runBounded(members, SETUP_CONCURRENCY, async (i) => {
    const { ep } = await scope.joined(memberName(i));
    const joined = await ep.joinChannel(CHANNEL);
    if (joined.class !== "durable") throw new Error(`channel ${CHANNEL} joined as ${joined.class}; the benchmark needs durable members`);
    memberEps.push(ep);
    void pump(ep).catch((err) => console.error(`member ${memberName(i)} stopped:`, err));
  });
  return {
    async post() {
      const id = randomUUID();
      const post = new Post(now(), members);
      posts.set(id, post);
      sent += members;
      await withTimeout(
        Promise.all([post.done, sender.send(CHANNEL, TEXT, { id })]),
        POST_TIMEOUT_MS,
        `Cotal post ${id} received and acked by ${members} members (received ${post.receipts.length}, acked ${post.acked})`,
      );
      posts.delete(id);
      return measure(post);
    },
    members: memberEps.map((ep) => ep.nc),
    tally: async () => {
      let pending = 0;
      for (const ep of memberEps) pending += await endpointPending(admin.jsm, ep, unconfirmed.settleMs);
      return arrivals.tally(sent, pending);
    },
    unconfirmed,
  };
}

async function rawSide(scope: Scope, members: number, ackMode: "ack" | "ackAck"): Promise<Side> {
  const posts = new Map<string, Post>();
  const tag = ackMode === "ack" ? "fan" : "fanaa";
  const pub = await scope.raw(`bench-${tag}-raw-pub`);
  const stream = `BENCH_RAW_${tag.toUpperCase()}`;
  const root = `raw${tag}.${scope.space}.chat`;
  const clients: RawClient[] = [];
  const durables: string[] = [];
  const arrivals = new Arrivals();
  const unconfirmed = new Unconfirmed();
  let sent = 0;
  await addRawStream(pub, scope.space, stream, [`${root}.>`], "CHAT");
  await runBounded(members, SETUP_CONCURRENCY, async (i) => {
    const client = await scope.raw(`bench-${tag}-raw-${memberName(i)}`);
    clients.push(client);
    const durable = `raw_${tag}_${memberName(i)}`;
    durables.push(durable);
    await addRawConsumer(client.jsm, stream, durable, `${root}.*.*.${CHANNEL}`);
    await consumeRaw(scope, client, stream, durable, (m) => {
      const id = m.headers?.get("Nats-Msg-Id") ?? "";
      const first = arrivals.add(`${id} to ${durable}`);
      const post = posts.get(id);
      if (!post || !first) {
        m.ack();
        return;
      }
      post.received();
      if (ackMode === "ack") {
        m.ack();
        post.ackedOne();
      } else {
        m.ackAck().then(
          () => post.ackedOne(),
          (err: unknown) => {
            unconfirmed.note(err);
            post.ackedOne();
          },
        );
      }
    });
  });
  const subject = `${root}.local.fan_sender.${CHANNEL}`;
  return {
    async post() {
      const id = randomUUID();
      const payload = envelopeLike(scope.space, "fan_sender", { channel: CHANNEL }, id, TEXT);
      const post = new Post(now(), members);
      posts.set(id, post);
      sent += members;
      await withTimeout(
        Promise.all([post.done, pub.js.publish(subject, payload, { msgID: id })]),
        POST_TIMEOUT_MS,
        `raw (${ackMode}) post ${id} received by ${members} consumers (received ${post.receipts.length})`,
      );
      posts.delete(id);
      return measure(post);
    },
    members: clients.map((c) => c.nc),
    tally: async () => {
      for (const c of clients) await c.nc.flush();
      return arrivals.tally(sent, await leftPending(pub.jsm, stream, durables, unconfirmed.settleMs));
    },
    unconfirmed,
  };
}

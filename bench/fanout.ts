// Channel post fan-out to M durable members: the time from one `send` until every member has
// received the post (p50/p99 over sequential posts; each waits until all members acked the
// previous one). Cotal: M joined endpoints in a durable channel (one `ch_` consumer each, made
// by the mesh service). Raw: M connections, each with a durable consumer on the same filter;
// and, to attribute the difference, the same with members acking by ackAck() as Cotal does.
import { randomUUID } from "node:crypto";
import type { Endpoint } from "../broker/index.js";
import { addRawConsumer, addRawStream, consumeRaw, envelopeLike, now, runBounded, withTimeout, type RawClient, type Scope } from "./context.js";
import { summarize, type Summary } from "./stats.js";

export interface FanoutOptions {
  /** Durable members of the channel. */
  members: number;
  /** Measured posts per side. */
  posts: number;
  /** Unmeasured posts per side first. */
  warmup: number;
  /** Alternating blocks (raw, Cotal, Cotal, raw, …) so drift hits both. */
  blocks: number;
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
  /** Seconds spent making the members (connect, join, join channel), per side. */
  setupSeconds: { cotal: number; raw: number };
  /**
   * Messages per second all member connections together receive while no one posts (Cotal:
   * presence heartbeats through every member's roster watch; raw: consumer heartbeats).
   */
  idleInboundPerSecond: { cotal: number; raw: number };
}

const CHANNEL = "bench.fanout";
const TEXT = "bench: a channel post of typical size, one line of status for the team";
const POST_TIMEOUT_MS = 30_000;
/** Members connected at once during setup. */
const SETUP_CONCURRENCY = 10;
/** Quiet window in which background traffic to the members is counted. */
const IDLE_WINDOW_MS = 2_000;

/** One post in flight: when it was sent and when each member got it. */
class Post {
  readonly receipts: number[] = [];
  acked = 0;
  readonly done: Promise<void>;
  #resolve!: () => void;
  failure: unknown;
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
  /** Messages received so far by all member connections together. */
  inbound(): number;
}

/** Inbound messages per second on a side's member connections over `ms` with no posts. */
async function idleRate(side: Side, ms: number): Promise<number> {
  const before = side.inbound();
  await new Promise((r) => setTimeout(r, ms));
  return ((side.inbound() - before) * 1000) / ms;
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
    const idleInboundPerSecond = { cotal: await idleRate(cotal, IDLE_WINDOW_MS), raw: await idleRate(raw, IDLE_WINDOW_MS) };
    const all = { cotal: [] as number[], raw: [] as number[], rawAckAck: [] as number[] };
    const first = { cotal: [] as number[], raw: [] as number[], rawAckAck: [] as number[] };
    const perBlock = Math.ceil(opts.posts / opts.blocks);
    for (let b = 0; b < opts.blocks; b++) {
      const n = Math.min(perBlock, opts.posts - b * perBlock);
      const order = b % 2 === 0 ? names : ([...names].reverse() as Array<(typeof names)[number]>);
      for (const side of order) {
        for (let i = 0; i < n; i++) {
          const [a, f] = await sides[side].post();
          all[side].push(a);
          first[side].push(f);
        }
      }
    }
    return {
      cotalAll: summarize(all.cotal),
      rawAll: summarize(all.raw),
      cotalFirst: summarize(first.cotal),
      rawFirst: summarize(first.raw),
      rawAckAckAll: summarize(all.rawAckAck),
      setupSeconds: { cotal: cotalSetup, raw: rawSetup },
      idleInboundPerSecond,
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
  const { ep: sender } = await scope.joined("fan_sender");
  const pump = async (ep: Endpoint) => {
    for await (const d of ep.deliveries) {
      const post = posts.get(d.message.id);
      if (!post || d.kind !== "channel") {
        await d.ack();
        continue;
      }
      post.received();
      d.ack().then(
        () => post.ackedOne(),
        (err: unknown) => (post.failure ??= err),
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
      await withTimeout(
        Promise.all([post.done, sender.send(CHANNEL, TEXT, { id })]),
        POST_TIMEOUT_MS,
        `Cotal post ${id} received and acked by ${members} members (received ${post.receipts.length}, acked ${post.acked})`,
      );
      posts.delete(id);
      if (post.failure) throw new Error("Cotal fan-out: an ack failed", { cause: post.failure });
      return measure(post);
    },
    inbound: () => memberEps.reduce((sum, ep) => sum + ep.nc.stats().inMsgs, 0),
  };
}

async function rawSide(scope: Scope, members: number, ackMode: "ack" | "ackAck"): Promise<Side> {
  const posts = new Map<string, Post>();
  const tag = ackMode === "ack" ? "fan" : "fanaa";
  const pub = await scope.raw(`bench-${tag}-raw-pub`);
  const stream = `BENCH_RAW_${tag.toUpperCase()}`;
  const root = `raw${tag}.${scope.space}.chat`;
  const clients: RawClient[] = [];
  await addRawStream(pub.jsm, scope.space, stream, [`${root}.>`], "CHAT");
  await runBounded(members, SETUP_CONCURRENCY, async (i) => {
    const client = await scope.raw(`bench-${tag}-raw-${memberName(i)}`);
    clients.push(client);
    const durable = `raw_${tag}_${memberName(i)}`;
    await addRawConsumer(client.jsm, stream, durable, `${root}.*.*.${CHANNEL}`);
    await consumeRaw(scope, client, stream, durable, (m) => {
      const post = posts.get(m.headers?.get("Nats-Msg-Id") ?? "");
      if (!post) {
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
          (err: unknown) => (post.failure ??= err),
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
      await withTimeout(
        Promise.all([post.done, pub.js.publish(subject, payload, { msgID: id })]),
        POST_TIMEOUT_MS,
        `raw (${ackMode}) post ${id} received by ${members} consumers (received ${post.receipts.length})`,
      );
      posts.delete(id);
      if (post.failure) throw new Error(`raw fan-out (${ackMode}): an ack failed`, { cause: post.failure });
      return measure(post);
    },
    inbound: () => clients.reduce((sum, c) => sum + c.nc.stats().inMsgs, 0),
  };
}

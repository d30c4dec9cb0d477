// Channel post fan-out to M durable members: the time from one `send` until every member has
// received the post (p50/p99 over sequential posts; each waits until all members acked the
// previous one). Cotal: M joined endpoints in a durable channel (one `ch_` consumer each, made
// by the mesh service). Raw: M connections, each with a durable consumer on the same filter.
import { randomUUID } from "node:crypto";
import type { Endpoint } from "../broker/index.js";
import { addRawConsumer, addRawStream, consumeRaw, now, runBounded, withTimeout, envelopeLike, type Scope } from "./context.js";
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
  /** Seconds spent making the members (connect, join, join channel), per side. */
  setupSeconds: { cotal: number; raw: number };
}

const CHANNEL = "bench.fanout";
const TEXT = "bench: a channel post of typical size, one line of status for the team";
const POST_TIMEOUT_MS = 30_000;
/** Members connected at once during setup. */
const SETUP_CONCURRENCY = 10;

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
}

export async function fanout(parent: Scope, opts: FanoutOptions): Promise<FanoutResult> {
  const scope = parent.child();
  try {
    let t = now();
    const cotal = await cotalSide(scope, opts.members);
    const cotalSetup = (now() - t) / 1000;
    t = now();
    const raw = await rawSide(scope, opts.members);
    const rawSetup = (now() - t) / 1000;
    for (let i = 0; i < opts.warmup; i++) {
      await raw.post();
      await cotal.post();
    }
    const all = { cotal: [] as number[], raw: [] as number[] };
    const first = { cotal: [] as number[], raw: [] as number[] };
    const perBlock = Math.ceil(opts.posts / opts.blocks);
    for (let b = 0; b < opts.blocks; b++) {
      const n = Math.min(perBlock, opts.posts - b * perBlock);
      const order = b % 2 === 0 ? (["raw", "cotal"] as const) : (["cotal", "raw"] as const);
      for (const side of order) {
        for (let i = 0; i < n; i++) {
          const [a, f] = await (side === "cotal" ? cotal : raw).post();
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
      setupSeconds: { cotal: cotalSetup, raw: rawSetup },
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
    void pump(ep).catch((err) => console.error(`member ${memberName(i)} stopped:`, err));
  });
  return {
    async post() {
      const id = randomUUID();
      const post = new Post(now(), members);
      posts.set(id, post);
      await withTimeout(Promise.all([post.done, sender.send(CHANNEL, TEXT, { id })]), POST_TIMEOUT_MS, `Cotal post ${id} received and acked by ${members} members (received ${post.receipts.length}, acked ${post.acked})`);
      posts.delete(id);
      if (post.failure) throw new Error("Cotal fan-out: an ack failed", { cause: post.failure });
      return measure(post);
    },
  };
}

async function rawSide(scope: Scope, members: number): Promise<Side> {
  const posts = new Map<string, Post>();
  const pub = await scope.raw("bench-fan-raw-pub");
  const stream = "BENCH_RAW_FAN";
  const root = `rawfan.${scope.space}.chat`;
  await addRawStream(pub.jsm, scope.space, stream, [`${root}.>`]);
  await runBounded(members, SETUP_CONCURRENCY, async (i) => {
    const client = await scope.raw(`bench-fan-raw-${memberName(i)}`);
    const durable = `raw_${memberName(i)}`;
    await addRawConsumer(client.jsm, stream, durable, `${root}.*.*.${CHANNEL}`);
    await consumeRaw(scope, client, stream, durable, (m) => {
      const post = posts.get(m.headers?.get("Nats-Msg-Id") ?? "");
      m.ack();
      if (!post) return;
      post.received();
      post.ackedOne();
    });
  });
  const subject = `${root}.local.fan_sender.${CHANNEL}`;
  return {
    async post() {
      const id = randomUUID();
      const payload = envelopeLike(scope.space, "fan_sender", { channel: CHANNEL }, id, TEXT);
      const post = new Post(now(), members);
      posts.set(id, post);
      await withTimeout(Promise.all([post.done, pub.js.publish(subject, payload, { msgID: id })]), POST_TIMEOUT_MS, `raw post ${id} received by ${members} consumers (received ${post.receipts.length})`);
      posts.delete(id);
      return measure(post);
    },
  };
}

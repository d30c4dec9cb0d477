// What every benchmark shares: the private server, the Cotal space, raw-client helpers that
// mirror Cotal's stream and consumer settings, and resource scopes that always close.
import { connect, type NatsConnection } from "@nats-io/transport-node";
import {
  AckPolicy,
  DeliverPolicy,
  jetstream,
  jetstreamManager,
  type ConsumerMessages,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
} from "@nats-io/jetstream";
import { ACK_WAIT_MS, clusterReplicas, Endpoint, MAX_ACK_PENDING, spaceStreams, type EndpointOptions, type RegisterReply } from "../broker/internal.js";
import { Teardown } from "./teardown.js";

/** Messages a consumer pulls per request; Cotal's endpoint uses the same figure. */
export const CONSUME_BATCH = 256;

const nanos = (ms: number) => ms * 1_000_000;

/** Resources opened by one benchmark, on its server and space; `close()` releases them in reverse order. */
export class Scope extends Teardown {
  constructor(
    /** Client URL of the benchmark's own nats-server. */
    readonly url: string,
    /** The provisioned Cotal space. */
    readonly space: string,
    /** Processes besides this one whose CPU a measured message costs (the nats-servers): bench/cpu.ts. */
    readonly pids: readonly number[] = [],
  ) {
    super();
  }

  /** A child scope; closed with this one if not closed before. */
  child(): Scope {
    const s = new Scope(this.url, this.space, this.pids);
    this.defer(() => s.close());
    return s;
  }

  /** Connect an endpoint as `name` and join the mesh (closed with the scope). */
  async joined(name: string, opts: Pick<EndpointOptions, "heartbeatMs"> = {}): Promise<Joined> {
    const ep = await Endpoint.connect({ server: this.url, space: this.space, name, ...opts });
    this.defer(() => ep.close());
    const reply = await ep.join();
    return { ep, reply };
  }

  /** A raw NATS connection with the same options Cotal's endpoint uses (closed with the scope). */
  async raw(name: string): Promise<RawClient> {
    const nc = await connect({ servers: this.url, name, maxReconnectAttempts: -1, reconnectTimeWait: 250, noAsyncTraces: true });
    this.defer(() => nc.close());
    return { nc, js: jetstream(nc), jsm: await jetstreamManager(nc) };
  }
}

/** A joined endpoint and the mesh service's answer (its DM durable's name). */
export interface Joined {
  ep: Endpoint;
  reply: RegisterReply;
}

/** One raw-client connection and its JetStream views. */
export interface RawClient {
  nc: NatsConnection;
  js: JetStreamClient;
  jsm: JetStreamManager;
}

/**
 * Create the raw baseline's stream with the settings Cotal gives its own `DM_<space>` (a work
 * queue: one consumer per filter) or `CHAT_<space>` (limits: one consumer per channel member),
 * under another name and subjects: file storage, retention and the same dedupe window.
 */
export async function addRawStream(client: RawClient, space: string, name: string, subjects: string[], like: "DM" | "CHAT" = "DM"): Promise<void> {
  // Replicated as Cotal's provisioning replicates it: R3 on a cluster of three or more, as `cotal up --cluster` does.
  const model = spaceStreams(space, { replicas: clusterReplicas(client.nc) }).find((s) => s.name === `${like}_${space}`);
  if (!model) throw new Error(`spaceStreams(${space}) has no ${like}_${space}; the raw baseline mirrors it`);
  await client.jsm.streams.add({ ...model, name, subjects, description: "cotal bench: raw-client baseline" });
}

/** Create a durable pull consumer with the settings Cotal's mesh service uses for inboxes. */
export async function addRawConsumer(jsm: JetStreamManager, stream: string, durable: string, filter: string): Promise<void> {
  await jsm.consumers.add(stream, {
    durable_name: durable,
    filter_subject: filter,
    ack_policy: AckPolicy.Explicit,
    ack_wait: nanos(ACK_WAIT_MS),
    max_ack_pending: MAX_ACK_PENDING,
    max_deliver: -1,
    deliver_policy: DeliverPolicy.All,
  });
}

/**
 * Consume a durable the way Cotal's endpoint does (`consume({max_messages: 256})`), handing
 * each message to `onMessage`. Returns the consumer's message iterator (stopped on close).
 */
export async function consumeRaw(scope: Scope, client: RawClient, stream: string, durable: string, onMessage: (m: JsMsg) => void): Promise<ConsumerMessages> {
  const consumer = await client.js.consumers.get(stream, durable);
  const iter = await consumer.consume({ max_messages: CONSUME_BATCH });
  scope.defer(async () => iter.stop());
  void (async () => {
    for await (const m of iter) onMessage(m);
  })().catch((err) => console.error(`raw consumer ${durable} stopped:`, err));
  return iter;
}

/** How long a run's consumers get to settle their last acks before what they hold counts as left over. */
const SETTLE_MS = 10_000;

/**
 * Messages still pending or unacknowledged on `durables` of `stream` after a run: 0 once every
 * one has settled (waited for up to `settleMs`, 10 s by default: acks may still be in flight),
 * else what is left.
 */
export async function leftPending(jsm: JetStreamManager, stream: string, durables: readonly string[], settleMs = SETTLE_MS): Promise<number> {
  const deadline = Date.now() + settleMs;
  for (;;) {
    let left = 0;
    for (const d of durables) {
      const info = await jsm.consumers.info(stream, d);
      left += info.num_pending + info.num_ack_pending;
    }
    if (left === 0 || Date.now() > deadline) return left;
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** What is left pending on every consumer of `stream` (every inbox of a space's DM stream, say), once settled. */
export async function streamPending(jsm: JetStreamManager, stream: string, settleMs?: number): Promise<number> {
  const durables: string[] = [];
  for await (const c of jsm.consumers.list(stream)) durables.push(c.name);
  return leftPending(jsm, stream, durables, settleMs);
}

/** What is left pending on every durable consumer `ep` reads (its DM inbox, channel memberships); call before it closes. */
export async function endpointPending(jsm: JetStreamManager, ep: Endpoint, settleMs?: number): Promise<number> {
  let left = 0;
  for (const c of ep.consumerStatus()) left += await leftPending(jsm, c.stream, [c.durable], settleMs);
  return left;
}

/** An async FIFO: producers `push`, one reader awaits `next`. */
export class Mailbox<T> {
  readonly #items: T[] = [];
  #waiter: ((v: T) => void) | undefined;

  push(v: T): void {
    const w = this.#waiter;
    if (w) {
      this.#waiter = undefined;
      w(v);
    } else {
      this.#items.push(v);
    }
  }

  next(): Promise<T> {
    if (this.#items.length) return Promise.resolve(this.#items.shift() as T);
    if (this.#waiter) throw new Error("Mailbox has one reader");
    return new Promise((r) => (this.#waiter = r));
  }

  get size(): number {
    return this.#items.length;
  }
}

/** Resolve with `p`, or reject after `ms` with a message saying what never happened. */
export async function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Run `task(i)` for i in [0, total) with at most `concurrency` in flight; rejects on the first failure. */
export async function runBounded(total: number, concurrency: number, task: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  let failed = false;
  const worker = async () => {
    while (!failed && next < total) {
      const i = next++;
      try {
        await task(i);
      } catch (err) {
        failed = true;
        throw err;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, total) }, worker));
}

/** A counter that resolves waiters once it reaches a target. */
export class Counter {
  #n = 0;
  #waiters: Array<{ target: number; resolve: () => void }> = [];

  get value(): number {
    return this.#n;
  }

  add(k = 1): void {
    this.#n += k;
    this.#waiters = this.#waiters.filter((w) => {
      if (this.#n < w.target) return true;
      w.resolve();
      return false;
    });
  }

  /** Resolves when the count is at least `target`. */
  reach(target: number): Promise<void> {
    if (this.#n >= target) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push({ target, resolve }));
  }
}

/**
 * A payload the same size and shape as a Cotal DM envelope, for the raw baseline: the raw
 * client carries the same bytes, it just neither validates nor verifies them.
 */
export function envelopeLike(space: string, from: string, address: Record<string, string>, id: string, text: string): Uint8Array {
  return new TextEncoder().encode(
    JSON.stringify({ id, ts: new Date().toISOString(), space, from: { id: `local.${from}`, name: from }, ...address, parts: [{ kind: "text", text }] }),
  );
}

/**
 * Confirmed acks (Cotal's Delivery.ack(), the raw client's ackAck()) whose confirmation failed:
 * on an overloaded machine the broker's answer can miss the client's timeout. The message counts
 * as handled (SPEC §5: a copy the broker redelivers is acked, not delivered), so a bench counts
 * it too, says how many, and gives the durable the ack wait to settle before what it holds counts
 * as pending; a copy that does come back shows as a duplicate.
 */
export class Unconfirmed {
  count = 0;
  first: unknown;
  note(err: unknown): void {
    this.count += 1;
    this.first ??= err;
  }
  /** How long the recipient's durable gets to settle: with unconfirmed acks, the ack wait (a lost ack's copy comes back then) and more. */
  get settleMs(): number | undefined {
    return this.count ? ACK_WAIT_MS + 15_000 : undefined;
  }
}

/** Unconfirmed acks per side of a bench, and the first reason. */
export interface UnconfirmedAcks {
  counts: Record<string, number>;
  first?: string;
}

/** The unconfirmed acks of a bench's sides, for its result and its notes. */
export function unconfirmedOf(sides: Record<string, Unconfirmed>): UnconfirmedAcks {
  const first = Object.values(sides).find((u) => u.first !== undefined)?.first;
  return { counts: Object.fromEntries(Object.entries(sides).map(([k, u]) => [k, u.count])), ...(first !== undefined ? { first: String(first) } : {}) };
}

/** "acks not confirmed (…): 3 cotal, 0 raw" for a row's note; empty when every ack was confirmed. */
export function unconfirmedNote(u: UnconfirmedAcks): string {
  const sides = Object.entries(u.counts);
  if (sides.every(([, n]) => n === 0)) return "";
  return `; acks sent but not confirmed, counted as handled: ${sides.map(([k, n]) => `${n} ${k}`).join(", ")} (first: ${u.first})`;
}

/** How long a count may stand still before a run counts as stuck rather than slow (a loaded 2-core machine is slow). */
export const STALL_MS = 60_000;

/**
 * Resolves once `counter` reaches `target`. Fails only when the count made no progress for
 * `stallMs`: a round of thousands of messages may take minutes on a loaded machine, and that is
 * a figure, not a failure; a count that stopped moving is.
 */
export async function progressTo(counter: Counter, target: number, what: string, stallMs = STALL_MS): Promise<void> {
  const reached = counter.reach(target).then(() => true);
  for (let last = counter.value; ; last = counter.value) {
    let timer: NodeJS.Timeout | undefined;
    const lapse = new Promise<false>((r) => (timer = setTimeout(() => r(false), stallMs)));
    const done = await Promise.race([reached, lapse]).finally(() => clearTimeout(timer));
    if (done) return;
    if (counter.value === last) throw new Error(`stuck: ${what} stayed at ${last} of ${target} for ${stallMs / 1000} s`);
  }
}

/** Milliseconds since an arbitrary origin, sub-millisecond resolution. */
export const now = (): number => performance.now();

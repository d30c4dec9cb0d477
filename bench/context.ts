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
import { ACK_WAIT_MS, Endpoint, MAX_ACK_PENDING, spaceStreams, type RegisterReply } from "../broker/internal.js";

/** Messages a consumer pulls per request; Cotal's endpoint uses the same figure. */
export const CONSUME_BATCH = 256;

const nanos = (ms: number) => ms * 1_000_000;

/** Resources opened by one benchmark; `close()` releases them in reverse order, errors ignored. */
export class Scope {
  readonly #closers: Array<() => Promise<unknown>> = [];
  #closed = false;

  constructor(
    /** Client URL of the benchmark's own nats-server. */
    readonly url: string,
    /** The provisioned Cotal space. */
    readonly space: string,
  ) {}

  /** Run `fn` when the scope closes. */
  defer(fn: () => Promise<unknown>): void {
    if (this.#closed) throw new Error("scope already closed");
    this.#closers.push(fn);
  }

  /** A child scope; closed with this one if not closed before. */
  child(): Scope {
    const s = new Scope(this.url, this.space);
    this.defer(() => s.close());
    return s;
  }

  /** Connect an endpoint as `name` and join the mesh (closed with the scope). */
  async joined(name: string): Promise<Joined> {
    const ep = await Endpoint.connect({ server: this.url, space: this.space, name });
    this.defer(() => ep.close());
    const reply = await ep.join();
    return { ep, reply };
  }

  /** A raw NATS connection with the same options Cotal's endpoint uses (closed with the scope). */
  async raw(name: string): Promise<RawClient> {
    const nc = await connect({ servers: this.url, name, maxReconnectAttempts: -1, reconnectTimeWait: 250 });
    this.defer(() => nc.close());
    return { nc, js: jetstream(nc), jsm: await jetstreamManager(nc) };
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const fn of this.#closers.splice(0).reverse()) await fn().catch(() => undefined);
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
export async function addRawStream(jsm: JetStreamManager, space: string, name: string, subjects: string[], like: "DM" | "CHAT" = "DM"): Promise<void> {
  const model = spaceStreams(space).find((s) => s.name === `${like}_${space}`);
  if (!model) throw new Error(`spaceStreams(${space}) has no ${like}_${space}; the raw baseline mirrors it`);
  await jsm.streams.add({ ...model, name, subjects, description: "cotal bench: raw-client baseline" });
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

/** Both sides' pending and ack-pending counts must reach zero: nothing was left unacked. */
export async function assertDrained(jsm: JetStreamManager, stream: string, durable: string, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const info = await jsm.consumers.info(stream, durable);
    if (info.num_pending === 0 && info.num_ack_pending === 0) return;
    if (Date.now() > deadline) {
      throw new Error(`${what}: consumer ${stream}/${durable} still has ${info.num_pending} pending and ${info.num_ack_pending} unacked after the run`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
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

/** Milliseconds since an arbitrary origin, sub-millisecond resolution. */
export const now = (): number => performance.now();

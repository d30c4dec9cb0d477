import type { Consumer, JetStreamClient, JsMsg } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { DELIVERY, REESTABLISH_DELAYS_MS, type CotalError } from "../schemas/index.js";
import { ConsumerLostError, type PermissionDeniedError } from "./errors.js";
import type { Logger } from "./log.js";
import { QuietPull, quietPullsFit, type PullSource } from "./quiet-pull.js";
import { fixedDelays, retry } from "./retry.js";

/**
 * The state of one durable consumer an endpoint reads (its DM inbox, role queue, channel
 * memberships). `consuming`: bound, with a pull outstanding; `re-establishing`: it stopped (it
 * was deleted, or stopped answering) and is being re-created through the mesh service; `lost`:
 * re-creating failed, nothing more arrives from it (see `error`).
 */
export interface ConsumerStatus {
  stream: string;
  durable: string;
  state: "consuming" | "re-establishing" | "lost";
  /** Set when `lost`. */
  error?: CotalError;
  /** When it entered this state, Unix ms. */
  since: number;
}

/** How a reader's consumers are pulled and re-created. */
export interface DurableReaderOptions {
  /** Waits before each attempt to re-create a stopped consumer, ms (default REESTABLISH_DELAYS_MS). */
  reestablishDelaysMs?: readonly number[] | undefined;
  /** How long a quiet pull waits before it is renewed (default DELIVERY.quietPullExpiresMs). */
  quietPullExpiresMs?: number | undefined;
}

/**
 * Every durable consumer one endpoint reads, and the engine that keeps each delivering: bound with
 * quiet pulls where they fit (broker/quiet-pull.ts) or nats.js's keepalive pulls where not,
 * re-created through the mesh service when it stops, its state reported to listeners. Messages go
 * to `onMessage`; the endpoint verifies and hands them over.
 */
export class DurableReader {
  private readonly stoppers: Array<() => void> = [];
  private readonly states = new Map<string, ConsumerStatus>();
  private readonly listeners = new Set<(s: ConsumerStatus) => void>();
  /** Subjects the broker refused this connection (from its async -ERR), latest refusal each. */
  private readonly refused = new Map<string, PermissionDeniedError>();
  /** Durables read without keepalives: pulled again after a reconnect. */
  private readonly quietPulls = new Set<QuietPull>();
  /** Stopped quiet pulls still confirming their pulls before their inboxes go (broker/quiet-pull.ts). */
  private readonly releasing = new Set<Promise<void>>();

  constructor(
    private readonly nc: NatsConnection,
    private readonly js: JetStreamClient,
    private readonly log: Logger,
    private readonly opts: DurableReaderOptions,
    private readonly onMessage: (m: JsMsg) => void,
  ) {}

  /** The broker refused `subject` on this connection: a pull bound to it is refused, not waited on. */
  noteRefusal(subject: string, err: PermissionDeniedError): void {
    if (this.refused.size > 100) this.refused.clear();
    this.refused.set(subject, err);
  }

  /** Back after a disconnect: the server that held the quiet pulls may have restarted. */
  repull(): void {
    for (const q of this.quietPulls) q.repull();
  }

  /** The durable consumers read, and whether each still delivers. */
  status(): ConsumerStatus[] {
    return [...this.states.values()].map((s) => ({ ...s }));
  }

  /** Hear every change of a consumer's status. */
  onStatus(listener: (s: ConsumerStatus) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Stop every consumer read with consume() (the memberships' own stops stop theirs). */
  stopAll(): void {
    for (const stop of this.stoppers.splice(0)) stop();
    this.states.clear();
  }

  /** Settles once every stopped pull has dropped its inbox: mail handed back after it cannot come back here. */
  async released(): Promise<void> {
    await Promise.all(this.releasing);
  }

  /**
   * Consume a durable. Resolves with a stop function once the consumer is bound and its first pull
   * went out unrefused; rejects (leaving nothing behind) when binding fails. If the consumer later
   * stops (deleted, or missing after missed heartbeats), it is re-created with `reestablish`
   * (through the mesh service) and bound again; when that keeps failing it is reported `lost`
   * (logged at error, and in status()) and still tried at the last delay, back to `consuming` when
   * it binds again.
   */
  async consume(stream: string, durable: string, reestablish: () => Promise<string>): Promise<() => void> {
    const key = `${stream}/${durable}`;
    let stopped = false;
    let current: PullSource | undefined;
    const stop = () => {
      stopped = true;
      current?.stop();
      this.states.delete(key);
    };
    const log = this.log.child({ stream, durable });
    const bind = async (name: string): Promise<PullSource> => {
      const consumer = await this.js.consumers.get(stream, name);
      const pull = `${this.js.getOptions().apiPrefix ?? "$JS.API"}.CONSUMER.MSG.NEXT.${stream}.${name}`;
      this.refused.delete(pull);
      const source = quietPullsFit(this.nc) ? this.quietPull(pull, stream, name) : await this.keepalivePull(consumer, log);
      let done = false;
      void source.ended.finally(() => (done = true));
      await this.nc.flush(); // a refused SUB or pull is answered before the PONG…
      await new Promise((r) => setImmediate(r)); // …and handled once pending callbacks ran
      const refused = this.refused.get(pull);
      if (done || refused) {
        source.stop();
        throw refused ?? (await source.ended) ?? new ConsumerLostError(stream, name);
      }
      return source;
    };
    const delays = this.opts.reestablishDelaysMs ?? REESTABLISH_DELAYS_MS;
    const attempt = async () => {
      durable = await reestablish();
      return bind(durable);
    };
    current = await bind(durable);
    this.stoppers.push(stop);
    this.setState(key, { stream, durable, state: "consuming", since: Date.now() });
    void (async () => {
      for (;;) {
        const ended = await current.ended;
        if (stopped || this.nc.isClosed()) return;
        log.warn({ err: ended }, "durable consumption stopped; re-establishing");
        this.setState(key, { stream, durable, state: "re-establishing", since: Date.now() });
        let lastErr: unknown = ended;
        let next: PullSource | undefined;
        try {
          next = await retry(attempt, { delays: fixedDelays(delays), stop: () => stopped || this.nc.isClosed() });
        } catch (err) {
          lastErr = err;
        }
        if (stopped || (!next && this.nc.isClosed())) {
          next?.stop();
          return;
        }
        if (!next) {
          const error = new ConsumerLostError(stream, durable, lastErr);
          this.setState(key, { stream, durable, state: "lost", error, since: Date.now() });
          // Lost is loud, never final: what waits in the stream arrives once the consumer can be
          // made again (a cluster still electing, a mesh service restarting), so keep trying.
          const every = delays[delays.length - 1] ?? REESTABLISH_DELAYS_MS[REESTABLISH_DELAYS_MS.length - 1]!;
          log.error({ err: error, retryEveryMs: every }, "durable consumer lost: nothing arrives from it until it is re-created; still trying");
          next = await retry(attempt, { delays: () => every, stop: () => stopped || this.nc.isClosed() }).catch(() => undefined);
          if (stopped || !next) {
            next?.stop();
            return;
          }
        }
        current = next;
        this.setState(key, { stream, durable, state: "consuming", since: Date.now() });
        log.warn("durable consumer re-established");
      }
    })();
    return stop;
  }

  /** A durable read without heartbeats (broker/quiet-pull.ts), pulled again after every reconnect. */
  private quietPull(pullSubject: string, stream: string, durable: string): PullSource {
    const expiresMs = this.opts.quietPullExpiresMs ?? DELIVERY.quietPullExpiresMs;
    const q = new QuietPull(this.nc, pullSubject, stream, durable, DELIVERY.pullBatch, expiresMs, this.onMessage);
    this.quietPulls.add(q);
    void q.ended.finally(() => this.quietPulls.delete(q));
    return {
      ended: q.ended,
      stop: () => {
        q.stop();
        // Tracked now, not once `ended` settles: a leaving seat asks released() right after
        // stopping, before any promise callback ran, and mail it handed back before the server
        // confirmed the pulls went straight back under them (test/broker/quiet-pull.test.ts).
        this.releasing.add(q.released);
        void q.released.finally(() => this.releasing.delete(q.released));
      },
    };
  }

  /** A durable read with nats.js's consume(): pulls renewed every DELIVERY.pullExpiresMs, heartbeats half that. */
  private async keepalivePull(consumer: Consumer, log: Logger): Promise<PullSource> {
    const it = await consumer.consume({ max_messages: DELIVERY.pullBatch, expires: DELIVERY.pullExpiresMs, abort_on_missing_resource: true });
    void (async () => {
      for await (const s of it.status()) {
        if (s.type === "heartbeats_missed") log.warn({ count: s.count }, "durable consumer missed heartbeats; checking it still exists");
        else if (s.type === "consumer_deleted" || s.type === "consumer_not_found") log.warn({ status: s.type }, "durable consumer is gone");
      }
    })();
    const ended = (async () => {
      try {
        for await (const m of it) this.onMessage(m);
        return await it.closed();
      } catch (err) {
        return err;
      }
    })();
    return { stop: () => it.stop(), ended };
  }

  private setState(key: string, s: ConsumerStatus): void {
    this.states.set(key, s);
    for (const l of this.listeners) l({ ...s });
  }
}

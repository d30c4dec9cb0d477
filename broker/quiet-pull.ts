import type { JsMsg } from "@nats-io/jetstream";
import type { Msg, NatsConnection, Subscription } from "@nats-io/transport-node";
import { ownInbox } from "./connect.js";
import { PullEndedError } from "./errors.js";
import { isDeliveryReply, PulledMsg } from "./pulled-msg.js";

/**
 * Can this connection read its durables without keepalives? Only where a pull cannot be lost
 * unless this connection notices: a single server that runs JetStream itself. There a pull
 * waits in the server that holds the connection, so it is lost only with that server (the
 * connection drops and reconnects: pull again) or with its consumer (the server says so: `409
 * Consumer Deleted`). In a cluster, a consumer's leader may die on another node; on a leaf
 * host, JetStream runs on the hub across a link that may restart: both keep nats.js's
 * heartbeats, which notice a lost pull within two of them (SPEC §4).
 */
export function quietPullsFit(nc: NatsConnection): boolean {
  const info = nc.info;
  return info?.jetstream === true && !info.cluster;
}

/** A durable being read: stop it, learn why it ended (undefined when stopped). */
export interface PullSource {
  stop(): void;
  readonly ended: Promise<unknown>;
}

/** JetStream's status codes on a pull's inbox. */
const IDLE_HEARTBEAT = 100;
const NO_MESSAGES = 404;
const REQUEST_TIMEOUT = 408;
const CONFLICT = 409;
const NO_RESPONDERS = 503;

/**
 * A durable consumer read with pulls that ask for no heartbeat and wait long
 * (DELIVERY.quietPullExpiresMs), so all that reaches an idle member is the `408` ending each pull,
 * one per durable per expiry (issue 30: it was a keepalive every 2.5 s). One pull of `batch` is
 * kept open, topped up once half of it has arrived, as nats.js's `consume()` does, and renewed
 * when it expires. It expires rather than waiting for ever because in a static space the broker
 * keeps an imported pull's reply route only DELIVERY.pullReplyThresholdMs: a pull that outlived it
 * would deliver to nobody (test/mesh/quiet-pull.test.ts).
 *
 * `repull()` asks again for a whole batch after a reconnect (the server that held the old pull
 * may have restarted; a pull that survived only adds a second waiting request, which the next
 * messages fill). When nothing at all arrived for half again the expiry (no message, no `408`),
 * the pull is taken as lost and made again. It ends with PullEndedError when the broker ends it
 * (consumer deleted, or nothing answers the pull: the consumer is missing), which the endpoint
 * answers by re-creating the consumer.
 */
export class QuietPull implements PullSource {
  readonly ended: Promise<unknown>;
  private finish!: (why: unknown) => void;
  private readonly inbox: string;
  private readonly sub: Subscription;
  /** Messages asked for and not yet received, over every open pull. */
  private pending = 0;
  private done = false;
  /** Fires when nothing arrived for longer than a pull can wait: the pull is made again. */
  private watchdog?: NodeJS.Timeout;

  constructor(
    private readonly nc: NatsConnection,
    /** `$JS.API.CONSUMER.MSG.NEXT.<stream>.<durable>` (under the connection's API prefix). */
    private readonly pullSubject: string,
    private readonly stream: string,
    private readonly durable: string,
    private readonly batch: number,
    private readonly expiresMs: number,
    private readonly onMessage: (m: JsMsg) => void,
  ) {
    this.ended = new Promise((resolve) => (this.finish = resolve));
    this.inbox = ownInbox(nc);
    this.sub = nc.subscribe(this.inbox, { callback: (err, msg) => (err ? this.end(err) : this.receive(msg)) });
    this.pull();
  }

  /** Ask for a whole batch again: after a reconnect the pull may have gone with the old server. */
  repull(): void {
    this.pending = 0;
    this.pull();
  }

  stop(): void {
    this.end(undefined);
  }

  private pull(): void {
    if (this.done || this.nc.isClosed()) return;
    this.watch();
    const want = this.batch - this.pending;
    if (want <= 0) return;
    this.pending += want;
    try {
      this.nc.publish(this.pullSubject, JSON.stringify({ batch: want, expires: this.expiresMs * 1_000_000 }), { reply: this.inbox });
    } catch (err) {
      this.end(err);
    }
  }

  /** (Re)arm the watchdog: a pull not heard of for half again its expiry is lost. */
  private watch(): void {
    clearTimeout(this.watchdog);
    this.watchdog = setTimeout(() => this.repull(), this.expiresMs * 1.5);
    this.watchdog.unref();
  }

  private receive(msg: Msg): void {
    this.watch();
    const code = msg.headers?.code ?? 0;
    if (code > 0) return this.status(code, msg);
    // Not a delivery (a static space's stand-in "JetStream not enabled" answer): nothing was used up.
    if (!isDeliveryReply(msg.reply)) return;
    this.pending = Math.max(0, this.pending - 1);
    this.onMessage(new PulledMsg(msg, this.nc));
    if (this.pending <= this.batch / 2) this.pull();
  }

  private status(code: number, msg: Msg): void {
    const description = msg.headers?.description ?? "";
    if (code === IDLE_HEARTBEAT) return;
    if (code === NO_MESSAGES || code === REQUEST_TIMEOUT || (code === CONFLICT && /leadership change/i.test(description))) {
      // A pull that ended unfilled: what it still asked for is no longer coming.
      const left = Number(msg.headers?.get("Nats-Pending-Messages") || this.pending);
      this.pending = Math.max(0, this.pending - left);
      this.pull();
      return;
    }
    // Enough pulls are waiting already: the ones there are still fill.
    if (code === CONFLICT && /exceeded maxwaiting/i.test(description)) return;
    this.end(
      new PullEndedError(this.stream, this.durable, code === NO_RESPONDERS ? "nothing answers its pulls (the consumer is missing)" : `${code} ${description}`),
    );
  }

  private end(why: unknown): void {
    if (this.done) return;
    this.done = true;
    clearTimeout(this.watchdog);
    this.sub.unsubscribe();
    this.finish(why);
  }
}

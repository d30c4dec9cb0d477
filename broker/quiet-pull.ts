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

/** How long a stopped quiet pull waits for the server to confirm its pulls are registered (QuietPull, `stop()`). */
const RELEASE_WAIT_MS = 2_000;

/** JetStream's status codes on a pull's inbox. */
const IDLE_HEARTBEAT = 100;
const NO_MESSAGES = 404;
const REQUEST_TIMEOUT = 408;
const CONFLICT = 409;
const NO_RESPONDERS = 503;

/**
 * A durable consumer read with pulls that ask for no heartbeat and wait long
 * (DELIVERY.quietPullExpiresMs), so all that reaches an idle member is the `408` ending each pull,
 * one per durable per expiry (it was once a keepalive every 2.5 s). One pull of `batch` is
 * kept open, topped up once half of it has arrived, as nats.js's `consume()` does, and renewed
 * when it expires. It expires rather than waiting for ever because in a static space the broker
 * keeps an imported pull's reply route only DELIVERY.pullReplyThresholdMs: a pull that outlived it
 * would deliver to nobody (test/broker/quiet-pull.test.ts).
 *
 * `repull()` asks again for a whole batch after a reconnect (the server that held the old pull
 * may have restarted; a pull that survived only adds a second waiting request, which the next
 * messages fill). When nothing at all arrived for half again the expiry (no message, no `408`),
 * the pull is taken as lost and made again. It ends with PullEndedError when the broker ends it
 * (consumer deleted, or nothing answers the pull: the consumer is missing), which the endpoint
 * answers by re-creating the consumer.
 *
 * `stop()` does not drop the inbox at once. A server queues pulls and registers them later, and a
 * pull that reached the JetStream account through a static space's import is tracked to its
 * requester only while the requester still listens: registered after the inbox is gone, it stays
 * waiting (seemingly wanted) until it expires and swallows what the consumer delivers meanwhile,
 * the next incarnation's mail held for up to the expiry plus the ack wait (seen as a DM stored for
 * an offline member arriving minutes late). So a stopped pull first sends a marker pull (`no_wait`,
 * batch 1) and keeps listening until it is answered: the server handles a consumer's pulls in
 * order, so every earlier pull is registered, and tracked to this inbox, before the inbox goes.
 * What arrives meanwhile is handed back (NAK) once it is gone. `released` settles then.
 */
export class QuietPull implements PullSource {
  readonly ended: Promise<unknown>;
  /** Settles once the inbox is unsubscribed: after a stop, once the server confirmed the pulls (class comment). */
  readonly released: Promise<void>;
  private finish!: (why: unknown) => void;
  private release!: () => void;
  private readonly inbox: string;
  private readonly sub: Subscription;
  /** Messages asked for and not yet received, over every open pull. */
  private pending = 0;
  private done = false;
  /** Stopped, waiting for the marker pull's answer before the inbox goes. */
  private releasing = false;
  /** Deliveries that arrived while releasing, handed back once the inbox is gone. */
  private readonly toReturn: PulledMsg[] = [];
  /** Whether any pull was sent: without one there is nothing the server could still register. */
  private pulled = false;
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
    this.released = new Promise((resolve) => (this.release = resolve));
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
    if (this.done) return;
    const confirm = this.pulled && !this.nc.isClosed();
    this.end(undefined, confirm);
    if (!confirm) return;
    this.releasing = true;
    const timer = setTimeout(() => this.unsubscribe(), RELEASE_WAIT_MS).unref();
    void this.released.finally(() => clearTimeout(timer));
    try {
      this.nc.publish(this.pullSubject, JSON.stringify({ batch: 1, no_wait: true }), { reply: this.inbox });
    } catch {
      this.unsubscribe();
    }
  }

  private pull(): void {
    if (this.done || this.nc.isClosed()) return;
    this.watch();
    const want = this.batch - this.pending;
    if (want <= 0) return;
    this.pending += want;
    this.pulled = true;
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
    if (this.releasing) return this.whileReleasing(msg);
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

  /**
   * After stop(): a delivery is kept to be handed back once the inbox is gone (handed back now, it
   * would come straight back to this still-registered pull); the marker's answer (`404`, or a `409`
   * refusing it) releases the inbox. A `408` is an earlier pull expiring, which proves nothing of
   * the pulls sent after it.
   */
  private whileReleasing(msg: Msg): void {
    const code = msg.headers?.code ?? 0;
    if (isDeliveryReply(msg.reply)) this.toReturn.push(new PulledMsg(msg, this.nc));
    else if (code === NO_MESSAGES || code === CONFLICT) this.unsubscribe();
  }

  private end(why: unknown, keepListening = false): void {
    if (this.done) return;
    this.done = true;
    clearTimeout(this.watchdog);
    if (!keepListening) this.unsubscribe();
    this.finish(why);
  }

  /** Drop the inbox, then hand back what arrived while releasing: the server reads the unsubscribe first. */
  private unsubscribe(): void {
    if (!this.sub.isClosed()) this.sub.unsubscribe();
    for (const m of this.toReturn.splice(0)) m.nak();
    this.release();
  }
}

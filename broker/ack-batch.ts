import type { NatsConnection } from "@nats-io/transport-node";
import type { JsMsg } from "@nats-io/jetstream";
import { ACK_RETRY_DELAYS_MS } from "../schemas/index.js";
import { AckUnconfirmedError } from "./errors.js";

/** What every ack sends on a delivery's reply subject. */
const ACK = "+ACK";

/**
 * Confirmed acks in batches. `Delivery.ack()` resolves only once the broker has processed the
 * ack (the message will not come back), which used to be one `ackAck()` request per message:
 * half of a receiver's round trips. Within one tick, acks of one consumer are now sent as plain
 * acks followed by one `ackAck()` for the last of them, and every ack of the batch resolves with
 * that one confirmation.
 *
 * Why one confirmation covers the batch: a connection's messages reach the server in order, the
 * server hands every ack of one consumer (`$JS.ACK.<stream>.<consumer>.…`) to that consumer's
 * ack queue in arrival order, and it answers the `ackAck()` only after processing it, so after
 * every ack queued before it.
 *
 * When the confirmation fails, the whole batch is sent again after each of `retryDelaysMs`: acks
 * are idempotent, and the usual cause passes (a cluster node died with the consumer's leader, and
 * until a new one is elected its ack subject has no responders: measured at about a second on
 * loopback). Only when every try failed does each ack of the batch reject, with
 * AckUnconfirmedError.
 */
export class AckBatcher {
  /** Per consumer (stream/durable): the acks of the current tick, in order. */
  private readonly open = new Map<string, Array<{ m: JsMsg; done: (err?: unknown) => void }>>();
  private scheduled = false;

  constructor(
    private readonly nc: NatsConnection,
    private readonly retryDelaysMs: readonly number[] = ACK_RETRY_DELAYS_MS,
  ) {}

  /** Ack `m`; resolves once the broker confirmed it (with the rest of its batch). */
  ack(m: JsMsg): Promise<void> {
    const key = `${m.info.stream}/${m.info.consumer}`;
    return new Promise<void>((resolve, reject) => {
      let batch = this.open.get(key);
      if (!batch) this.open.set(key, (batch = []));
      batch.push({ m, done: (err) => (err === undefined ? resolve() : reject(err)) });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.scheduled = false;
    const batches = [...this.open.values()];
    this.open.clear();
    for (const batch of batches) {
      void this.confirm(batch.map((a) => a.m)).then((err) => {
        for (const a of batch) a.done(err);
      });
    }
  }

  /** Send the batch's acks, then again after each retry delay until one try is confirmed; the last error if none is. */
  private async confirm(msgs: JsMsg[]): Promise<AckUnconfirmedError | undefined> {
    const last = msgs[msgs.length - 1]!;
    for (const a of msgs.slice(0, -1)) a.ack();
    let cause: unknown;
    try {
      if (await last.ackAck()) return undefined;
      cause = new Error("the client had acked this message already");
    } catch (err) {
      cause = err;
    }
    // A retry cannot go through JsMsg (it sends an ack once): it publishes on the reply subjects.
    const replies = msgs.map(replyOf);
    if (replies.some((r) => r === undefined)) return new AckUnconfirmedError(msgs.length, cause);
    for (const wait of this.retryDelaysMs) {
      await new Promise((r) => setTimeout(r, wait));
      if (this.nc.isClosed()) break;
      try {
        for (const r of replies.slice(0, -1)) this.nc.publish(r!, ACK);
        await this.nc.request(replies[replies.length - 1]!, ACK);
        return undefined;
      } catch (err) {
        cause = err;
      }
    }
    return new AckUnconfirmedError(msgs.length, cause);
  }
}

/** The delivery's ack subject: nats.js keeps it on the message it wraps (not on the JsMsg interface). */
function replyOf(m: JsMsg): string | undefined {
  const reply = (m as Partial<{ reply: unknown }>).reply;
  return typeof reply === "string" && reply !== "" ? reply : undefined;
}

import type { JsMsg } from "@nats-io/jetstream";
import { AckUnconfirmedError } from "./errors.js";

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
 * every ack queued before it. When the confirmation fails (no responders while a cluster elects
 * the consumer's new leader, a timeout), every ack of the batch rejects with AckUnconfirmedError
 * at once: a receiver that settles one message at a time is not held up, and the endpoint acks
 * the copy the broker redelivers after the ack wait (SPEC §5). Trying again here instead held
 * such receivers for up to 18 s per message during a node loss, long enough to miss the next DM.
 */
export class AckBatcher {
  /** Per consumer (stream/durable): the acks of the current tick, in order. */
  private readonly open = new Map<string, Array<{ m: JsMsg; done: (err?: unknown) => void }>>();
  private scheduled = false;

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

  /** Send the batch's acks, the last one confirmed; the error when it is not. */
  private async confirm(msgs: JsMsg[]): Promise<AckUnconfirmedError | undefined> {
    const last = msgs[msgs.length - 1]!;
    for (const a of msgs.slice(0, -1)) a.ack();
    try {
      if (await last.ackAck()) return undefined;
      return new AckUnconfirmedError(msgs.length, new Error("the client had acked this message already"));
    } catch (err) {
      return new AckUnconfirmedError(msgs.length, err);
    }
  }
}

import type { JsMsg } from "@nats-io/jetstream";

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
 * every ack queued before it. When the confirmation fails, every ack of its batch fails with it
 * (they may or may not have landed: the caller treats it as it treated a failed ackAck).
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
      const last = batch[batch.length - 1]!;
      for (const a of batch.slice(0, -1)) a.m.ack();
      last.m.ackAck().then(
        (ok) => {
          const err = ok ? undefined : new Error(`the broker did not confirm the ack of ${batch.length} message(s)`);
          for (const a of batch) a.done(err);
        },
        (err: unknown) => {
          for (const a of batch) a.done(err);
        },
      );
    }
  }
}

import type { JsMsg } from "@nats-io/jetstream";
import { ClosedConnectionError, NoRespondersError, TimeoutError, type Msg, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import { ownInbox } from "./connect.js";
import { AckUnconfirmedError } from "./errors.js";

/** How long a confirmation may take before the batch counts as unconfirmed (nats.js's JetStream API timeout). */
const CONFIRM_TIMEOUT_MS = 5_000;
const ACK = new TextEncoder().encode("+ACK");

/**
 * Confirmed acks in batches. `Delivery.ack()` resolves only once the broker has processed the
 * ack (the message will not come back), which used to be one `ackAck()` request per message:
 * half of a receiver's round trips. Within one tick, acks of one consumer are now sent as plain
 * acks followed by one `ackAck()` for the last of them, and every ack of the batch resolves with
 * that one confirmation.
 *
 * The confirmation is an ack sent as a request to one inbox subscription of this batcher: what
 * nats.js's `ackAck()` does through a request object, a timer race and an Error (with its stack
 * trace) that it builds when the request completes, per call; with 50 members in one process,
 * those Errors alone were ≈ 20 µs a confirmation under load (docs/performance.md).
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
  /** Confirmations awaited, by token under `inbox`. */
  private readonly waiting = new Map<string, { resolve: () => void; reject: (err: Error) => void; timer: NodeJS.Timeout }>();
  private inbox?: string;
  private sub?: Subscription;
  private next = 0;

  constructor(private readonly nc: NatsConnection) {}

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
      await this.ackConfirmed(last);
      return undefined;
    } catch (err) {
      return new AckUnconfirmedError(msgs.length, err);
    }
  }

  /** Ack `m` as a request; resolves when the broker answered (it processed the ack), rejects on no responders or timeout. */
  private async ackConfirmed(m: JsMsg): Promise<void> {
    // The ack subject is the message's reply subject (nats.js has it at run time, not in its types).
    const reply = (m as JsMsg & { reply?: unknown }).reply;
    if (typeof reply !== "string" || reply === "") {
      if (!(await m.ackAck())) throw new Error("the client had acked this message already");
      return;
    }
    const inbox = this.confirmations();
    const token = String(this.next++);
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(token);
        reject(new TimeoutError());
      }, CONFIRM_TIMEOUT_MS);
      this.waiting.set(token, { resolve, reject, timer });
      try {
        this.nc.publish(reply, ACK, { reply: `${inbox}.${token}` });
      } catch (err) {
        this.settle(token, err as Error);
      }
    });
  }

  /** The inbox confirmations come back on (subscribed on first use, for the connection's life). */
  private confirmations(): string {
    if (this.inbox && this.sub && !this.sub.isClosed()) return this.inbox;
    const inbox = ownInbox(this.nc);
    this.inbox = inbox;
    const sub = this.nc.subscribe(`${inbox}.*`, {
      callback: (err, msg) => {
        if (err) {
          // Refused: nothing will answer.
          this.settleAll(err);
          return;
        }
        this.settle(msg.subject.slice(inbox.length + 1), noResponders(msg) ? new NoRespondersError(msg.subject) : undefined);
      },
    });
    this.sub = sub;
    // Closed with the connection (or drained): what still waits gets no answer; say so now, as
    // nats.js does for its requests, rather than hold the process for the timeout.
    void sub.closed.then(() => {
      if (this.sub === sub) this.settleAll(new ClosedConnectionError());
    });
    return inbox;
  }

  private settleAll(err: Error): void {
    for (const token of [...this.waiting.keys()]) this.settle(token, err);
  }

  private settle(token: string, err?: Error): void {
    const w = this.waiting.get(token);
    if (!w) return;
    this.waiting.delete(token);
    clearTimeout(w.timer);
    if (err) w.reject(err);
    else w.resolve();
  }
}

/** The server's "no responders" status: nobody holds the consumer (its leader is being elected, or it is gone). */
function noResponders(msg: Msg): boolean {
  return msg.data.length === 0 && msg.headers?.code === 503;
}

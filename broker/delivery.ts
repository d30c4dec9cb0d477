import type { CotalMessage, Principal } from "../schemas/index.js";
import { BoundedSet } from "./bounded-set.js";

/** Where a delivery came from. */
export type DeliverySource = "live" | "durable" | "history";

/**
 * One message handed to the application. Sender and kind come from the subject, never from
 * the payload. Durable deliveries must be settled with ack/nak/term; live and historical
 * ones settle as no-ops.
 */
export interface Delivery {
  /**
   * The envelope as stored, except `from.name`, which is the verified sender's actor (`from`
   * below): a payload's name is only a claim and is never shown.
   */
  readonly message: CotalMessage;
  readonly kind: "channel" | "dm" | "anycast";
  /** The sender, taken from the subject. */
  readonly from: Principal;
  /** Channel name for channel posts. */
  readonly channel?: string;
  /** Role for anycasts. */
  readonly role?: string;
  readonly source: DeliverySource;
  /** Backfilled from history at join, not received live. */
  readonly historical: boolean;
  /** The broker delivered it before (or its id was seen): the agent may already have seen it. */
  readonly possibleRepeat: boolean;
  /** Stream sequence, when stored. */
  readonly seq?: number;
  /** The message was handed over: the broker may forget it. */
  ack(): Promise<void>;
  /** Not handled now: redeliver after `delayMs`. */
  nak(delayMs?: number): void;
  /** Never deliver again (e.g. malformed); `reason` is logged, not sent (servers before 2.10 ignore a +TERM with text). */
  term(reason?: string): void;
  /** Still holding it: reset the broker's ack timer. */
  working(): void;
}

/**
 * Dedupe by message id (never on an empty id). `held` ids are queued or handed and not yet
 * settled; `done` ids were acked (bounded memory).
 */
export class IdLedger {
  private readonly held = new Set<string>();
  private readonly done: BoundedSet<string>;
  constructor(capacity = 20_000) {
    this.done = new BoundedSet(capacity);
  }

  isHeld(id: string): boolean {
    return id !== "" && this.held.has(id);
  }
  isDone(id: string): boolean {
    return id !== "" && this.done.has(id);
  }
  hold(id: string): void {
    if (id) this.held.add(id);
  }
  release(id: string): void {
    this.held.delete(id);
  }
  settle(id: string): void {
    if (!id) return;
    this.held.delete(id);
    this.done.add(id);
  }
}

/** An unbounded async queue of deliveries (the application pulls; producers push). */
export class DeliveryQueue implements AsyncIterable<Delivery> {
  private readonly items: Delivery[] = [];
  private waiters: Array<(d: IteratorResult<Delivery>) => void> = [];
  private closed = false;

  push(d: Delivery): void {
    if (this.closed) return;
    const w = this.waiters.shift();
    if (w) w({ value: d, done: false });
    else this.items.push(d);
  }

  close(): void {
    this.closed = true;
    for (const w of this.waiters) w({ value: undefined, done: true });
    this.waiters = [];
  }

  get size(): number {
    return this.items.length;
  }

  next(): Promise<IteratorResult<Delivery>> {
    const d = this.items.shift();
    if (d) return Promise.resolve({ value: d, done: false });
    if (this.closed) return Promise.resolve({ value: undefined, done: true });
    return new Promise((r) => this.waiters.push(r));
  }

  [Symbol.asyncIterator](): AsyncIterator<Delivery> {
    return { next: () => this.next() };
  }
}

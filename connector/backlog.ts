// The backlog present when a seat joins, and the latch a draining hook waits on so that a
// session's first context holds the mail that waited for it. Counted, not timed: the broker says
// how many messages each durable holds for the seat (pending, and delivered but unacked: those
// may sit in the client's buffer), and the latch opens once that many arrived and nothing is left
// queued, or when its deadline passes (mail delivered to a crashed predecessor stays unacked
// until the broker's ack wait runs out: it will not arrive in time, and no hook waits for it).
import { jetstreamManager } from "@nats-io/jetstream";
import { JS_OPTIONS, type Endpoint } from "../broker/index.js";
import { durables, names, type Principal } from "../schemas/index.js";

/** What the broker holds for a seat that just joined. */
export interface JoinBacklog {
  /** Messages its durables hold: not yet delivered, or delivered and not acked. */
  messages: number;
  /** The ack wait of its DM durable, ms, when it could be read. */
  ackWaitMs?: number;
}

/** Ask the broker what the seat's DM durable and channel memberships hold. */
export async function joinBacklog(ep: Endpoint, space: string, me: Principal, dmDurable: string): Promise<JoinBacklog> {
  const jsm = await jetstreamManager(ep.jsConnection, JS_OPTIONS);
  const info = (stream: string, durable: string) => jsm.consumers.info(stream, durable).catch(() => undefined);
  const infos = await Promise.all([
    info(names.dmStream(space), dmDurable),
    ...ep.joinedChannels().map((ch) => info(names.chatStream(space), durables.channel(me, ch))),
  ]);
  const messages = infos.reduce((n, i) => n + (i ? i.num_pending + i.num_ack_pending : 0), 0);
  const ackWait = infos[0]?.config.ack_wait;
  return { messages, ...(ackWait ? { ackWaitMs: Math.floor(ackWait / 1e6) } : {}) };
}

/** Opens once the join backlog arrived (durable deliveries counted from the start of consuming). */
export class BacklogLatch {
  private arrived = 0;
  private target?: number;
  private timer?: NodeJS.Timeout;
  private open!: () => void;
  /** Resolves once the backlog arrived or the deadline passed. */
  readonly ready = new Promise<void>((r) => (this.open = r));

  /** @param queued deliveries received by the client and not yet taken by the seat. */
  constructor(private readonly queued: () => number) {}

  /** A delivery reached the inbox (only durable ones are part of the join backlog). */
  delivered(source: "live" | "durable" | "history"): void {
    if (source === "durable") this.arrived += 1;
    this.check();
  }

  /** The join backlog is known: open when `messages` arrived, or after `timeoutMs`. */
  expect(messages: number, timeoutMs: number): void {
    this.target = messages;
    this.timer = setTimeout(() => this.open(), timeoutMs);
    this.timer.unref();
    this.check();
  }

  private check(): void {
    if (this.target === undefined || this.arrived < this.target || this.queued() > 0) return;
    clearTimeout(this.timer);
    this.open();
  }
}

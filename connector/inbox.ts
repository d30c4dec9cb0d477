// The seat's bounded inbox: every durable and live delivery lands here, directed mail first.
// Pure policy over settle-able mail (no NATS): the connector feeds it deliveries and hands
// batches of it to the model through hooks and cotal_inbox.
import { randomUUID } from "node:crypto";
import type { CotalMessage, Principal } from "../schemas/index.js";
import { BoundedSet } from "../broker/index.js";
import { frameMessage, frameParts, type FrameInput } from "./framing.js";

/** How many ids the inbox (and the connector's returned-mail note) remembers to flag repeats. */
export const ID_MEMORY = 10_000;

/** A delivery the inbox can hold and settle (the broker's `Delivery` is one). */
export interface Mail {
  readonly message: CotalMessage;
  readonly kind: "channel" | "dm" | "anycast";
  readonly from: Principal;
  readonly channel?: string;
  readonly role?: string;
  readonly source: "live" | "durable" | "history";
  readonly historical: boolean;
  readonly possibleRepeat: boolean;
  ack(): Promise<void>;
  nak(delayMs?: number): void;
  working(): void;
}

/**
 * directed: DMs, anycasts and posts that mention this agent (wake now, shown first).
 * channel: ordinary posts on normal and quiet channels (shown by hooks after directed mail).
 * pull: posts on muted channels and history backfilled at join; only `cotal_inbox` returns them.
 */
export type InboxClass = "directed" | "channel" | "pull";

const CLASS_RANK: Record<InboxClass, number> = { directed: 0, channel: 1, pull: 2 };

export interface InboxEntry {
  readonly id: string;
  readonly mail: Mail;
  /** Other deliveries of the same message id, settled with it. */
  readonly dups: Mail[];
  cls: InboxClass;
  mentionsYou: boolean;
  /** Arrival order. */
  readonly order: number;
  readonly arrivedAt: number;
  /** The broker or an unconfirmed hand-over says the agent may have seen it. */
  possibleRepeat: boolean;
  /** Id of the hand-over it is part of, while one is open. */
  handover?: string;
  /** Parts already confirmed written, for a message returned in parts. */
  partsSent?: number;
  /** Length of the framed message, characters. */
  readonly chars: number;
}

/** Classification of a delivery at arrival (and again when channel modes change). */
export type Classifier = (mail: Mail) => { cls: InboxClass; mentionsYou: boolean };

export interface InboxOptions {
  /** Most messages held (default 200). */
  capacity?: number;
  /** Most framed characters held (default 4,000,000). */
  maxChars?: number;
  /** Redelivery delay asked of the broker for evicted directed mail, ms (default 5,000). */
  nakDelayMs?: number;
}

/** Why an entry left the inbox without being handed over. */
export interface Eviction {
  entry: InboxEntry;
  /** acked: channel traffic the agent will not see; returned: directed mail left to the broker; dropped: live/history copy. */
  action: "acked" | "returned" | "dropped";
}

/** A set of entries handed to the model together; confirmed (acked) or released as a unit. */
export interface Handover {
  id: string;
  entries: InboxEntry[];
  /** For a message returned in parts: which part this hand-over carries (1-based) of how many. */
  part?: { index: number; total: number };
}

/** What a drain or window selected, and the framed text for it. */
export interface Selection {
  handover?: Handover;
  text: string[];
  /** Messages still waiting after this selection (excluding pull-only ones). */
  waiting: number;
  /** Pull-only messages waiting (muted channels, history). */
  pullOnly: number;
  /** Waiting messages too large to ever fit this kind of reply. */
  tooLarge: number;
}

export function frameInput(e: Pick<InboxEntry, "mail" | "mentionsYou" | "possibleRepeat">): FrameInput {
  const m = e.mail.message;
  return {
    kind: e.mail.kind,
    from: `${e.mail.from.owner}.${e.mail.from.actor}`,
    ...(m.from.role ? { fromRole: m.from.role } : {}),
    ...(m.sentBy ? { sentBy: m.sentBy } : {}),
    ...(e.mail.role ? { toRole: e.mail.role } : {}),
    ...(e.mail.channel ? { channel: e.mail.channel } : {}),
    id: m.id,
    ts: m.ts,
    parts: m.parts,
    possibleRepeat: e.possibleRepeat,
    historical: e.mail.historical,
    mentionsYou: e.mentionsYou,
  };
}

/**
 * Holds at most `capacity` messages (and `maxChars` framed characters). On overflow it evicts
 * pull-only entries first, then channel traffic (oldest first), and directed mail only when no
 * other entry can go (the newest directed entry goes, usually the one arriving); it never
 * evicts an entry that is being handed over. Evicted channel traffic is acked; evicted directed
 * mail is not (it is nak'd with a delay, so the broker redelivers it later).
 */
export class Inbox {
  private readonly items = new Map<string, InboxEntry>();
  private readonly handovers = new Map<string, Handover>();
  private counter = 0;
  private totalChars = 0;
  /** Directed mail evicted back to the broker and not seen again yet. */
  private readonly returned = new BoundedSet<string>(ID_MEMORY);
  /** Ids that were in a hand-over that was not confirmed. */
  private readonly surfaced = new BoundedSet<string>(ID_MEMORY);
  readonly capacity: number;
  readonly maxChars: number;
  readonly nakDelayMs: number;

  constructor(
    private readonly classify: Classifier,
    opts: InboxOptions = {},
    private readonly onSettleError: (err: unknown, entry: InboxEntry) => void = () => undefined,
  ) {
    this.capacity = opts.capacity ?? 200;
    this.maxChars = opts.maxChars ?? 4_000_000;
    this.nakDelayMs = opts.nakDelayMs ?? 5_000;
  }

  get size(): number {
    return this.items.size;
  }

  /** Directed messages evicted to the broker that have not come back yet. */
  get returnedCount(): number {
    return this.returned.size;
  }

  /**
   * Take a delivery in. A second delivery of an id already held joins it (settled together).
   * Returns the new entry (undefined for a duplicate) and whatever was evicted to make room.
   */
  add(mail: Mail, now = Date.now()): { entry?: InboxEntry; evicted: Eviction[] } {
    const id = mail.message.id;
    const existing = this.items.get(id);
    if (existing) {
      existing.dups.push(mail);
      return { evicted: [] };
    }
    const { cls, mentionsYou } = this.classify(mail);
    const wasReturned = this.returned.delete(id);
    const possibleRepeat = this.surfaced.has(id) || (mail.possibleRepeat && !wasReturned);
    const base = { mail, mentionsYou, possibleRepeat };
    const entry: InboxEntry = {
      id,
      mail,
      dups: [],
      cls,
      mentionsYou,
      order: this.counter++,
      arrivedAt: now,
      possibleRepeat,
      chars: frameMessage(frameInput(base)).length,
    };
    this.items.set(id, entry);
    this.totalChars += entry.chars;
    const evicted = this.enforceBounds();
    return { ...(evicted.some((e) => e.entry === entry) ? {} : { entry }), evicted };
  }

  /** Re-classify every entry (after a channel mode changed). */
  reclassify(): void {
    for (const e of this.items.values()) {
      const c = this.classify(e.mail);
      e.cls = c.cls;
      e.mentionsYou = c.mentionsYou;
    }
  }

  /** Entries in hand-over order: directed, then channel, then pull-only; arrival order within. */
  entries(): InboxEntry[] {
    return [...this.items.values()].sort((a, b) => CLASS_RANK[a.cls] - CLASS_RANK[b.cls] || a.order - b.order);
  }

  /** Counts by class, plus what is being handed over. */
  counts(): Record<InboxClass, number> & { total: number; inHandover: number; returned: number } {
    const c = { directed: 0, channel: 0, pull: 0, total: this.items.size, inHandover: 0, returned: this.returned.size };
    for (const e of this.items.values()) {
      c[e.cls] += 1;
      if (this.pinned(e)) c.inHandover += 1;
    }
    return c;
  }

  private pinned(e: InboxEntry): boolean {
    return e.handover !== undefined || (e.partsSent ?? 0) > 0;
  }

  private enforceBounds(): Eviction[] {
    const out: Eviction[] = [];
    while (this.items.size > this.capacity || this.totalChars > this.maxChars) {
      const victim = this.pickVictim();
      if (!victim) break; // everything is being handed over: hold on until it settles
      out.push(this.evict(victim));
    }
    return out;
  }

  private pickVictim(): InboxEntry | undefined {
    const free = [...this.items.values()].filter((e) => !this.pinned(e));
    const oldest = (cls: InboxClass) => free.filter((e) => e.cls === cls).sort((a, b) => a.order - b.order)[0];
    return oldest("pull") ?? oldest("channel") ?? free.filter((e) => e.cls === "directed").sort((a, b) => b.order - a.order)[0];
  }

  private remove(e: InboxEntry): void {
    if (this.items.get(e.id) === e) {
      this.items.delete(e.id);
      this.totalChars -= e.chars;
    }
  }

  private evict(e: InboxEntry): Eviction {
    this.remove(e);
    const all = [e.mail, ...e.dups];
    const durable = all.some((m) => m.source === "durable");
    if (e.cls === "directed" && durable) {
      for (const m of all) m.nak(this.nakDelayMs);
      this.returned.add(e.id);
      return { entry: e, action: "returned" };
    }
    for (const m of all) m.ack().catch((err) => this.onSettleError(err, e));
    return { entry: e, action: durable ? "acked" : "dropped" };
  }

  /** Keep every held durable message alive on the broker (reset its ack timer). */
  keepAlive(): number {
    let n = 0;
    for (const e of this.items.values()) {
      for (const m of [e.mail, ...e.dups]) {
        if (m.source === "durable") {
          m.working();
          n += 1;
        }
      }
    }
    return n;
  }

  private open(entries: InboxEntry[], part?: Handover["part"]): Handover {
    const h: Handover = { id: randomUUID(), entries, ...(part ? { part } : {}) };
    for (const e of entries) e.handover = h.id;
    this.handovers.set(h.id, h);
    return h;
  }

  /**
   * Select mail for a hook's additionalContext: directed then channel entries (never pull-only),
   * whole messages only, within `budget` characters for the entries. Stops at the first entry
   * that does not fit; an entry that could never fit is skipped and counted as too large.
   */
  drain(budget: number): Selection {
    const candidates = this.entries().filter((e) => !this.pinned(e) && e.cls !== "pull");
    const text: string[] = [];
    const chosen: InboxEntry[] = [];
    let used = 0;
    let tooLarge = 0;
    for (const e of candidates) {
      const framed = frameMessage(frameInput(e));
      if (framed.length + 1 > budget) {
        tooLarge += 1;
        continue;
      }
      if (used + framed.length + 1 > budget) break;
      text.push(framed);
      chosen.push(e);
      used += framed.length + 1;
    }
    const waiting = candidates.length - chosen.length;
    const pullOnly = [...this.items.values()].filter((e) => e.cls === "pull" && !this.pinned(e)).length;
    return { ...(chosen.length ? { handover: this.open(chosen) } : {}), text, waiting, pullOnly, tooLarge };
  }

  /**
   * Select a window for `cotal_inbox`: every class, in order, whole messages within `budget`
   * characters and `maxMessages`. A message that cannot fit a reply on its own is returned in
   * parts, one part per call, and stays held (being handed over) until its last part is written.
   */
  window(budget: number, maxMessages: number): Selection {
    const inParts = [...this.items.values()].find((e) => (e.partsSent ?? 0) > 0 && e.handover === undefined);
    const free = this.entries().filter((e) => !this.pinned(e));
    const pullOnlyLeft = (chosen: Set<InboxEntry>) => free.filter((e) => e.cls === "pull" && !chosen.has(e)).length;
    const first = inParts ?? free[0];
    if (first && (inParts || frameMessage(frameInput(first)).length + 1 > budget)) {
      const parts = frameParts(frameInput(first), budget);
      const index = (first.partsSent ?? 0) + 1;
      const h = this.open([first], { index, total: parts.length });
      const rest = free.filter((e) => e !== first);
      return {
        handover: h,
        text: [parts[index - 1]!],
        waiting: rest.filter((e) => e.cls !== "pull").length,
        pullOnly: pullOnlyLeft(new Set([first])),
        tooLarge: 0,
      };
    }
    const chosen: InboxEntry[] = [];
    const text: string[] = [];
    let used = 0;
    for (const e of free) {
      if (chosen.length >= maxMessages) break;
      const framed = frameMessage(frameInput(e));
      if (used + framed.length + 1 > budget) break;
      chosen.push(e);
      text.push(framed);
      used += framed.length + 1;
    }
    const picked = new Set(chosen);
    const waiting = free.filter((e) => !picked.has(e) && e.cls !== "pull").length;
    return { ...(chosen.length ? { handover: this.open(chosen) } : {}), text, waiting, pullOnly: pullOnlyLeft(picked), tooLarge: 0 };
  }

  /** The hand-over was written where the model reads it: ack its messages and clear them. */
  async confirm(handoverId: string): Promise<number> {
    const h = this.handovers.get(handoverId);
    if (!h) return 0;
    this.handovers.delete(handoverId);
    if (h.part && h.part.index < h.part.total) {
      for (const e of h.entries) {
        e.handover = undefined;
        e.partsSent = h.part.index;
      }
      return 0;
    }
    let acked = 0;
    await Promise.all(
      h.entries.map(async (e) => {
        this.remove(e);
        e.handover = undefined;
        try {
          await Promise.all([e.mail, ...e.dups].map((m) => m.ack()));
          acked += 1;
        } catch (err) {
          // Shown, ack unconfirmed: the endpoint acks a copy the broker hands out again instead of
          // delivering it; should one still reach the inbox, it is flagged a possible repeat.
          this.surfaced.add(e.id);
          this.onSettleError(err, e);
        }
      }),
    );
    return acked;
  }

  /**
   * The hand-over failed (hook killed, timed out, reply not written): its messages stay, flagged
   * as possible repeats, to be surfaced again.
   */
  release(handoverId: string): void {
    const h = this.handovers.get(handoverId);
    if (!h) return;
    this.handovers.delete(handoverId);
    for (const e of h.entries) {
      e.handover = undefined;
      e.possibleRepeat = true;
      this.surfaced.add(e.id);
    }
  }

  /** Ids of the held messages the broker will redeliver (durable ones): what returnAll() gives back. */
  durableIds(): string[] {
    return [...this.items.values()].filter((e) => [e.mail, ...e.dups].some((m) => m.source === "durable")).map((e) => e.id);
  }

  /** Give everything back to the broker (shutdown): durable mail is nak'd for prompt redelivery. */
  returnAll(): number {
    let n = 0;
    for (const e of this.items.values()) {
      for (const m of [e.mail, ...e.dups]) {
        if (m.source === "durable") {
          m.nak(0);
          n += 1;
        }
      }
    }
    this.items.clear();
    this.handovers.clear();
    this.totalChars = 0;
    return n;
  }
}

import type { Subscription } from "@nats-io/transport-node";
import { approvalEventsOf, callControl, collectHistory, credsCaller, verifyEnvelope, type Logger, type RosterEntry } from "../../broker/index.js";
import { approvalLine } from "../terminal/approval-text.js";
import {
  eventsChannelOf,
  frameOf,
  FrameFolder,
  messageText,
  parsePrincipal,
  patterns,
  principalId,
  type AgUiFrame,
  type FoldedEvent,
  type CotalMessage,
  type Principal,
} from "../../schemas/index.js";
import { senderLabel } from "../terminal/format.js";
import { clock, oneLine } from "../terminal/output.js";
import type { MeshSession } from "../mesh-client/session.js";

/** One thing the console shows: a post on a channel, or a frame on an agent's event plane. */
export interface FeedItem {
  /** Stored (history) or received live. */
  historical: boolean;
  at: number;
  channel: string;
  from: Principal;
  message: CotalMessage;
  /** The frame, when the post is on an event plane and carries one. */
  frame?: AgUiFrame;
}

/** A readable timeline line for each event of a frame that a person would want to see (text is shown whole at its end). */
export class FrameRenderer {
  private readonly folder = new FrameFolder();

  lines(who: string, frame: AgUiFrame): Array<{ at: number; text: string }> {
    return this.folder.fold(frame, Date.now()).map((e) => ({ at: e.at, text: `${who} ${wordOf(e, frame.runId)}` }));
  }
}

function wordOf(e: FoldedEvent, runId: string): string {
  switch (e.kind) {
    case "run-started":
      return `▶ turn started (${oneLine(runId).slice(0, 12)})`;
    case "run-finished":
      return "■ turn finished";
    case "run-failed":
      return `✗ turn ended: ${oneLine(e.text ?? "run failed")}`;
    case "prompt":
    case "reply":
      return `${e.kind === "prompt" ? "« prompt" : "» says"}: ${oneLine(e.text ?? "").slice(0, 500)}`;
    case "tool-started":
      return `⚙ ${oneLine(e.tool ?? "tool")} started`;
    case "tool-ended":
      return `⚙ ${oneLine(e.tool ?? "tool")} ended`;
  }
}

/** The plain one-line form of a feed item (several lines for a frame). */
export function plainLines(item: FeedItem, renderer: FrameRenderer): string[] {
  const mark = item.historical ? "[history] " : "";
  const who = item.from.owner === "local" ? item.from.actor : principalId(item.from);
  if (item.frame) {
    // A seat's permission asks and their outcomes (CUSTOM events) beside its turn's events, in time order.
    const asks = approvalEventsOf(item.from, item.frame).map((e) => {
      const l = approvalLine(e);
      return { at: l.at, text: `${who} ${l.text}` };
    });
    return [...renderer.lines(who, item.frame), ...asks].sort((a, b) => a.at - b.at).map((l) => `${mark}${clock(l.at)} ${l.text}`);
  }
  return [
    `${mark}${clock(item.message.ts)} #${oneLine(item.channel)} ${senderLabel(item.message)}: ${oneLine(messageText(item.message)) || `(${item.message.parts.map((p) => p.kind).join(", ")})`}`,
  ];
}

/** The event planes of the agents on a roster. */
export function planesOf(entries: RosterEntry[]): string[] {
  return entries.filter((e) => e.presence.card.kind === "agent").map((e) => eventsChannelOf(parsePrincipal(e.id)));
}

/**
 * History then live for a set of channels (event planes among them), read the way a client
 * credential may: history through the mesh service (which enforces the read scope), live posts
 * by core subscription. Channels the credential may not read are skipped (`refused`). Live
 * posts that history already showed are dropped by id.
 */
export class ConsoleFeed {
  private readonly subs = new Map<string, Subscription>();
  private readonly seen = new Set<string>();
  readonly refused = new Set<string>();
  /** add() calls in progress: live items are held while any runs. */
  private adding = 0;
  private buffer: FeedItem[] = [];

  constructor(
    private readonly s: MeshSession,
    private readonly log: Logger,
    private readonly emit: (item: FeedItem) => void,
  ) {}

  /** Add channels: subscribe live first (held back), then print their history since `sinceMs`, then what arrived meanwhile. */
  async add(channels: string[], sinceMs: number): Promise<void> {
    const fresh = channels.filter((c) => !this.subs.has(c) && !this.refused.has(c));
    // Live items wait until every add in progress (a roster change starts another) printed its history.
    this.adding += 1;
    const items: FeedItem[] = [];
    try {
      for (const channel of fresh) {
        // Live first, so nothing posted while the history is read falls between the two (ids dedupe the overlap).
        this.subscribe(channel);
        let history;
        try {
          history = await collectHistory(channel, { sinceMs }, (args) =>
            callControl(this.s.nc, this.s.target.space, "history", credsCaller(this.s.target.creds), args),
          );
        } catch (err) {
          // A scoped credential sees only its own planes: the others are left out, not shown as errors.
          this.subs.get(channel)?.unsubscribe();
          this.subs.delete(channel);
          this.refused.add(channel);
          this.log.debug({ channel, err: (err as Error).message }, "channel not readable with this credential; left out");
          continue;
        }
        for (const h of history) items.push({ historical: true, at: h.storedAt, channel, from: h.from, message: h.message, ...frameField(h.message) });
      }
    } finally {
      items.sort((a, b) => a.at - b.at);
      for (const it of items) this.show(it);
      this.adding -= 1;
      if (this.adding === 0) for (const it of this.buffer.splice(0)) this.show(it);
    }
  }

  private subscribe(channel: string): void {
    const sub = this.s.nc.subscribe(patterns.channelPosts(this.s.target.space, channel), {
      callback: (err, msg) => {
        if (err) {
          this.log.debug({ channel, err: err.message }, "live subscription ended");
          return;
        }
        const v = verifyEnvelope(msg.subject, msg.data, this.log);
        if (!v || v.kind !== "channel" || !v.channel) return;
        const item: FeedItem = { historical: false, at: v.message.ts, channel: v.channel, from: v.from, message: v.message, ...frameField(v.message) };
        if (this.adding > 0) this.buffer.push(item);
        else this.show(item);
      },
    });
    this.subs.set(channel, sub);
  }

  private show(item: FeedItem): void {
    if (this.seen.has(item.message.id)) return;
    this.seen.add(item.message.id);
    if (this.seen.size > 100_000) this.seen.clear();
    this.emit(item);
  }

  close(): void {
    for (const s of this.subs.values()) s.unsubscribe();
    this.subs.clear();
  }
}

function frameField(m: CotalMessage): { frame?: AgUiFrame } {
  const f = frameOf(m.parts);
  return f ? { frame: f } : {};
}

// Wake policy (pure): when to ring the session's doorbell with `notifications/claude/channel`.
// A wake never carries mail itself (a notification has no receipt, so nothing could be acked):
// it says what waits and how to read it; hooks and cotal_inbox hand the mail over.
import type { Attention, ChannelMode } from "../schemas/index.js";
import type { InboxEntry } from "./inbox.js";
import { ambientWakeText, directedWakeText } from "./model-text.js";

/** One doorbell ring. */
export interface Wake {
  kind: "directed" | "ambient";
  /** The notification text (built only from trusted tokens and counts). */
  content: string;
  /** Notification meta: identifier keys, string values. */
  meta: Record<string, string>;
}

/** What the policy may look at when deciding. */
export interface WakeView {
  attention: Attention;
  /** A turn is running: directed wakes wait for the next idle transition. */
  turnOpen: boolean;
  modeOf(channel: string): ChannelMode;
  /** Directed entries not being handed over. */
  directedWaiting(): InboxEntry[];
  /** Channel entries (normal and quiet channels) not being handed over. */
  channelWaiting(): InboxEntry[];
  /** Who this seat is, for the text. */
  me: string;
}

/**
 * open: directed mail wakes at once (after the turn, if one runs); ambient posts on normal
 * channels are batched into one wake at the next idle transition. focus: directed only.
 * dnd: nothing wakes (mail still waits and is drained at the next prompt). Quiet channels
 * never wake; muted ones are pull-only. A mention counts as directed unless its channel is muted.
 */
export class Waker {
  /** A directed wake was sent and nothing was handed over since: do not ring again. */
  private directedRung = false;
  /** Ambient posts arrived since the last wake or hand-over. */
  private ambientPending = 0;

  constructor(private readonly ring: (w: Wake) => void) {}

  /** A message entered the inbox. */
  arrived(e: InboxEntry, v: WakeView): void {
    if (v.attention === "dnd") return;
    if (e.cls === "directed") {
      if (v.turnOpen || this.directedRung) return;
      this.ringDirected(v);
      return;
    }
    if (e.cls === "channel" && e.mail.channel && v.modeOf(e.mail.channel) === "normal") this.ambientPending += 1;
  }

  /** The session went idle (Stop, StopFailure): one wake for whatever waited through the turn. */
  idle(v: WakeView): void {
    if (v.attention === "dnd") return;
    if (v.directedWaiting().length > 0) {
      this.ringDirected(v);
      this.ambientPending = 0;
      return;
    }
    if (v.attention !== "open" || this.ambientPending === 0) return;
    const ambient = v.channelWaiting().filter((e) => e.mail.channel && v.modeOf(e.mail.channel) === "normal");
    this.ambientPending = 0;
    if (ambient.length === 0) return;
    const channels = [...new Set(ambient.map((e) => e.mail.channel!))];
    this.ring({
      kind: "ambient",
      content: ambientWakeText(v.me, ambient.length, channels),
      meta: { kind: "ambient", count: String(ambient.length) },
    });
  }

  /** Mail was handed over (hook drain or cotal_inbox): the doorbell was answered. */
  answered(): void {
    this.directedRung = false;
    this.ambientPending = 0;
  }

  private ringDirected(v: WakeView): void {
    const waiting = v.directedWaiting();
    if (waiting.length === 0) return;
    this.directedRung = true;
    this.ring({
      kind: "directed",
      content: directedWakeText(v.me, waiting),
      meta: { kind: "directed", count: String(waiting.length) },
    });
  }
}

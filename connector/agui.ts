import {
  EventType,
  type CustomEvent,
  type RunErrorEvent,
  type RunFinishedEvent,
  type RunStartedEvent,
  type TextMessageContentEvent,
  type TextMessageEndEvent,
  type TextMessageStartEvent,
  type ToolCallEndEvent,
  type ToolCallStartEvent,
} from "@ag-ui/core";
import { z } from "zod";

/** The AG-UI events a seat publishes (typed by the AG-UI protocol's own package). */
export type SeatEvent =
  | RunStartedEvent
  | RunFinishedEvent
  | RunErrorEvent
  | TextMessageStartEvent
  | TextMessageContentEvent
  | TextMessageEndEvent
  | ToolCallStartEvent
  | ToolCallEndEvent
  | CustomEvent;

/** An event with the run it belongs to (a frame holds the events of one run). */
export interface RunEvent {
  runId: string;
  event: SeatEvent;
}

/** What is open on the plane: at most one run, and its tool calls. Serialisable (it goes in the WAL). */
export interface RunState {
  threadId: string;
  runId?: string;
  openTools: string[];
}

/** The fixed message of a run that ended on an API error (docs/events.md): no detail leaves the seat. */
export const RUN_FAILED = "run failed";
/** The message of a run a crash left open, closed by the next writer. */
export const RUN_INTERRUPTED = "run interrupted";

/** Longest text delta in one event, characters (a frame must fit the server's payload). */
export const MAX_DELTA_CHARS = 8_000;

// Plain objects, not loose ones: the rest of a record (tool inputs and results among it) is left
// behind by the check instead of copied, which was most of its cost.
const Block = z.object({
  type: z.string(),
  text: z.string().optional(),
  id: z.string().optional(),
  name: z.string().optional(),
  tool_use_id: z.string().optional(),
});
/** The transcript fields the mapper reads; everything else (tool inputs and results among them) is never looked at. */
const TranscriptRecord = z.object({
  type: z.string(),
  uuid: z.string().optional(),
  timestamp: z.string().optional(),
  isSidechain: z.boolean().optional(),
  isMeta: z.boolean().optional(),
  isCompactSummary: z.boolean().optional(),
  isApiErrorMessage: z.boolean().optional(),
  message: z.object({ role: z.string().optional(), content: z.union([z.string(), z.array(Block)]).optional(), stop_reason: z.string().nullish() }).optional(),
});

/**
 * Maps Claude transcript records to AG-UI events, one record at a time, keeping the invariant
 * readers rely on: one open run at a time, nothing outside a run, every message and tool call
 * opened and closed inside its run, in order. Tool arguments and results are never read.
 * Each event's fields are in `AgUiEvent`'s order: a frame read back from the WAL then serialises
 * as it did when first written, so its message id (a hash of that text) is the same after a restart.
 */
export class AgUiMapper {
  constructor(readonly state: RunState) {}

  /** The events one transcript record (already parsed JSON) produces. */
  map(raw: unknown): RunEvent[] {
    const parsed = TranscriptRecord.safeParse(raw);
    if (!parsed.success) return [];
    const r = parsed.data;
    if (r.isSidechain || !r.message || (r.type !== "user" && r.type !== "assistant")) return [];
    const ts = r.timestamp ? Date.parse(r.timestamp) : Date.now();
    const timestamp = Number.isFinite(ts) ? ts : Date.now();
    const id = r.uuid ?? `rec-${timestamp}`;
    const content = r.message.content;
    const out: RunEvent[] = [];
    if (r.type === "user") {
      if (Array.isArray(content) && content.some((b) => b.type === "tool_result")) {
        for (const b of content) if (b.type === "tool_result" && b.tool_use_id) out.push(...this.endTool(b.tool_use_id, timestamp));
        return out;
      }
      if (r.isMeta || r.isCompactSummary) return [];
      const text = typeof content === "string" ? content : (content ?? []).flatMap((b) => (b.type === "text" && b.text ? [b.text] : [])).join("\n");
      if (!text) return [];
      // A prompt opens a turn: a run still open (no end was seen) is finished first.
      out.push(...this.close("finished", timestamp), ...this.open(id, timestamp), ...this.text(id, "user", text, timestamp));
      return out;
    }
    if (r.isApiErrorMessage) return [...this.ensureRun(id, timestamp), ...this.close("failed", timestamp)];
    (Array.isArray(content) ? content : typeof content === "string" ? [{ type: "text", text: content }] : []).forEach((b, i) => {
      if (b.type === "text" && b.text) out.push(...this.ensureRun(id, timestamp), ...this.text(`${id}:${i}`, "assistant", b.text, timestamp));
      else if (b.type === "tool_use" && b.id && !this.state.openTools.includes(b.id)) {
        out.push(...this.ensureRun(id, timestamp));
        this.state.openTools.push(b.id);
        out.push(this.ev({ type: EventType.TOOL_CALL_START, timestamp, toolCallId: b.id, toolCallName: (b.name ?? "tool").slice(0, 200) }));
      }
    });
    if (r.message.stop_reason === "end_turn" && this.state.runId) out.push(...this.close("finished", timestamp));
    return out;
  }

  /**
   * Close the open run, if any: its open tool calls end, then `RUN_FINISHED` (no outcome
   * claim), or `RUN_ERROR` with the fixed message `run failed` (or `run interrupted` for a run a
   * crash left open).
   */
  close(how: "finished" | "failed" | "interrupted", timestamp = Date.now()): RunEvent[] {
    const runId = this.state.runId;
    if (!runId) return [];
    const out: RunEvent[] = this.state.openTools.map((toolCallId) => ({ runId, event: { type: EventType.TOOL_CALL_END, timestamp, toolCallId } }));
    this.state.openTools = [];
    const end: SeatEvent =
      how === "finished"
        ? { type: EventType.RUN_FINISHED, timestamp, threadId: this.state.threadId, runId }
        : { type: EventType.RUN_ERROR, timestamp, message: how === "failed" ? RUN_FAILED : RUN_INTERRUPTED, code: how };
    out.push({ runId, event: end });
    delete this.state.runId;
    return out;
  }

  private ensureRun(id: string, timestamp: number): RunEvent[] {
    return this.state.runId ? [] : this.open(id, timestamp);
  }

  private open(runId: string, timestamp: number): RunEvent[] {
    this.state.runId = runId;
    this.state.openTools = [];
    return [{ runId, event: { type: EventType.RUN_STARTED, timestamp, threadId: this.state.threadId, runId } }];
  }

  private endTool(toolCallId: string, timestamp: number): RunEvent[] {
    const i = this.state.openTools.indexOf(toolCallId);
    if (i < 0) return [];
    this.state.openTools.splice(i, 1);
    return [this.ev({ type: EventType.TOOL_CALL_END, timestamp, toolCallId })];
  }

  private text(messageId: string, role: "user" | "assistant", text: string, timestamp: number): RunEvent[] {
    const out = [this.ev({ type: EventType.TEXT_MESSAGE_START, timestamp, messageId, role })];
    for (let i = 0; i < text.length; i += MAX_DELTA_CHARS)
      out.push(this.ev({ type: EventType.TEXT_MESSAGE_CONTENT, timestamp, messageId, delta: text.slice(i, i + MAX_DELTA_CHARS) }));
    out.push(this.ev({ type: EventType.TEXT_MESSAGE_END, timestamp, messageId }));
    return out;
  }

  private ev(event: SeatEvent): RunEvent {
    return { runId: this.state.runId!, event };
  }
}

/**
 * Check the plane's invariant over a stream of events (in frame order): one open run at a
 * time, nothing outside a run, messages and tool calls opened once and closed once inside
 * their run. Returns the first violation, or undefined. Used by tests and `cotal console`.
 */
export function streamViolation(events: readonly { type: string; runId?: string; messageId?: string; toolCallId?: string }[]): string | undefined {
  let run: string | undefined;
  const open = new Set<string>();
  const seen = new Set<string>();
  for (const [i, e] of events.entries()) {
    // A CUSTOM event (an approval's ask, answer, expiry) stands alone: it opens and closes nothing.
    if (e.type === "CUSTOM") continue;
    const key = e.messageId !== undefined ? `m:${e.messageId}` : e.toolCallId !== undefined ? `t:${e.toolCallId}` : undefined;
    if (e.type === "RUN_STARTED") {
      if (run) return `event ${i}: run ${e.runId} started while ${run} is open`;
      run = e.runId;
      continue;
    }
    if (!run) return `event ${i}: ${e.type} outside a run`;
    if (e.type === "RUN_FINISHED" || e.type === "RUN_ERROR") {
      if (open.size) return `event ${i}: ${e.type} with ${[...open].join(", ")} still open`;
      run = undefined;
    } else if (e.type.endsWith("_START")) {
      if (!key || seen.has(key)) return `event ${i}: ${e.type} opens ${key} twice`;
      seen.add(key);
      open.add(key);
    } else if (e.type.endsWith("_END")) {
      if (!key || !open.delete(key)) return `event ${i}: ${e.type} closes ${key}, which is not open`;
    } else if (!key || !open.has(key)) return `event ${i}: ${e.type} for ${key}, which is not open`;
  }
  return undefined;
}

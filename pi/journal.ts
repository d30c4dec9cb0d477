// A pi session as the event plane reads it (docs/events.md). pi keeps its session as JSON lines
// of its own shape; Cotal's extension sees the same messages live (`message_end`), so it writes a
// journal of them: one JSON line per transcript record (runtime/transcript-record.ts: Claude's
// shape), which the connector tails like any transcript. Tool arguments and results are never
// read: a call keeps its name and id, its result only the id. The mail a hook added (a custom
// message) is not part of it, as in Claude's transcript. Pure: the extension does the writing.
import type { TranscriptRecord } from "../runtime/index.js";

/** A pi message as `message_end` carries it (0.73.1; the fields read here). */
export interface PiMessage {
  role?: unknown;
  content?: unknown;
  stopReason?: unknown;
  toolCallId?: unknown;
}

const str = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined);

/** The text of a user message's content (a string, or its text parts). */
function userText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((p: { type?: unknown; text?: unknown }) => (p?.type === "text" && typeof p.text === "string" ? p.text : ""))
    .filter((t) => t !== "")
    .join("\n");
}

/** pi's stop reasons → the transcript's (only a finished turn and a tool call are read). */
const STOP: Readonly<Record<string, string>> = { stop: "end_turn", toolUse: "tool_use", length: "max_tokens" };

/** The records one finished message stands for (none for a custom or empty one). */
export function journalRecords(m: PiMessage, uuid: () => string, at: string): TranscriptRecord[] {
  if (m.role === "user") {
    const text = userText(m.content);
    return text.trim() === "" ? [] : [{ type: "user", uuid: uuid(), timestamp: at, message: { role: "user", content: text } }];
  }
  if (m.role === "toolResult") {
    const id = str(m.toolCallId);
    return id ? [{ type: "user", uuid: uuid(), timestamp: at, message: { role: "user", content: [{ type: "tool_result", tool_use_id: id }] } }] : [];
  }
  if (m.role !== "assistant") return [];
  const parts = Array.isArray(m.content) ? (m.content as Array<{ type?: unknown; text?: unknown; id?: unknown; name?: unknown }>) : [];
  const content: Array<{ type: "text"; text: string } | { type: "tool_use"; id: string; name: string }> = [];
  for (const p of parts) {
    if (p?.type === "text" && typeof p.text === "string" && p.text !== "") content.push({ type: "text", text: p.text });
    const id = str(p?.id);
    const name = str(p?.name);
    if (p?.type === "toolCall" && id && name) content.push({ type: "tool_use", id, name });
  }
  const stop = typeof m.stopReason === "string" ? STOP[m.stopReason] : undefined;
  const failed = m.stopReason === "error";
  return [
    {
      type: "assistant",
      uuid: uuid(),
      timestamp: at,
      ...(failed ? { isApiErrorMessage: true } : {}),
      message: { role: "assistant", content, ...(stop ? { stop_reason: stop } : {}) },
    },
  ];
}

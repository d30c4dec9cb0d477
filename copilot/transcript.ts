// Reading a GitHub Copilot CLI session for the event plane (docs/events.md, docs/runtimes.md).
// Copilot 1.0.102 writes each session as JSON lines (`<COPILOT_HOME>/session-state/<id>/events.jsonl`,
// the `transcript_path` of its Stop hook): `{type, data, id, timestamp}`, one per session event.
// This maps a line to the transcript records the plane's mapper reads (Claude's shape), so frames
// have a Claude seat's shape. Read: `user.message` (its `content`, the prompt as typed, not the
// `transformedContent` Copilot sends with what a hook added), `assistant.message` (its text and
// tool requests by name), `tool.execution_complete` (the call's id). Never read: tool arguments and
// results, hook inputs and outputs (`hook.*`), system messages.
import type { TranscriptRecord } from "../runtime/index.js";

interface CopilotLine {
  type?: string;
  id?: string;
  timestamp?: string;
  data?: { content?: unknown; toolRequests?: Array<{ toolCallId?: unknown; name?: unknown }>; toolCallId?: unknown };
}

const str = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined);

/** The transcript records one session line (parsed JSON) stands for; none for anything else. */
export function copilotTranscriptRecords(raw: unknown): TranscriptRecord[] {
  if (!raw || typeof raw !== "object") return [];
  const line = raw as CopilotLine;
  const uuid = str(line.id);
  if (!uuid) return [];
  const at = str(line.timestamp) ? { timestamp: line.timestamp! } : {};
  const d = line.data ?? {};
  if (line.type === "user.message") {
    const text = str(d.content)?.trim();
    return text ? [{ type: "user", uuid, ...at, message: { role: "user", content: text } }] : [];
  }
  if (line.type === "tool.execution_complete") {
    const id = str(d.toolCallId);
    return id ? [{ type: "user", uuid, ...at, message: { role: "user", content: [{ type: "tool_result", tool_use_id: id }] } }] : [];
  }
  if (line.type !== "assistant.message") return [];
  const content: Array<{ type: "text"; text: string } | { type: "tool_use"; id: string; name: string }> = [];
  const text = str(d.content);
  if (text) content.push({ type: "text", text });
  for (const t of d.toolRequests ?? []) {
    const id = str(t?.toolCallId);
    const name = str(t?.name);
    if (id && name) content.push({ type: "tool_use", id, name });
  }
  const calls = content.some((c) => c.type === "tool_use");
  return [{ type: "assistant", uuid, ...at, message: { role: "assistant", content, stop_reason: calls ? "tool_use" : "end_turn" } }];
}

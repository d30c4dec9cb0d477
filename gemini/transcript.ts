// Reading a Gemini CLI session for the event plane (docs/events.md, docs/runtimes.md): Gemini
// 0.61.0 writes each session as JSON lines under its home (`.gemini/tmp/<project>/chats/
// session-<time>-<id>.jsonl`, the `transcript_path` of every hook): a header, `$set` updates, and
// one line per message, `{id, timestamp, type: "user"|"gemini", content, toolCalls?}`. A model
// message is written again, under the same id, once its tool calls are known (with their results).
// This maps a line to the transcript records the plane's mapper reads (Claude's shape), so frames
// have a Claude seat's shape. What is never published: what a hook added to a prompt
// (`<hook_context>…</hook_context>`: the mail handed over), tool arguments and results (a call
// keeps its name and id, a response only its id).
import type { TranscriptRecord } from "../runtime/index.js";

interface GeminiPart {
  text?: string;
  functionResponse?: { id?: string; name?: string };
}

interface GeminiLine {
  id?: string;
  timestamp?: string;
  type?: string;
  content?: string | GeminiPart[];
  toolCalls?: Array<{ id?: string; name?: string }>;
}

/** What Gemini adds to a user message that is context, not the person's prompt. */
const CONTEXT = /<(hook_context|session_context)>[\s\S]*?<\/\1>/g;

/** The prompt of a user message: its text parts without the blocks a hook or the CLI added. */
function promptOf(parts: GeminiPart[]): string {
  return parts
    .flatMap((p) => (typeof p.text === "string" ? [p.text.replace(CONTEXT, "").trim()] : []))
    .filter((t) => t !== "")
    .join("\n");
}

/** The transcript records one session line (parsed JSON) stands for; none for anything else. */
export function geminiTranscriptRecords(raw: unknown): TranscriptRecord[] {
  if (!raw || typeof raw !== "object") return [];
  const line = raw as GeminiLine;
  if (typeof line.id !== "string") return [];
  const uuid = line.id;
  const at = line.timestamp !== undefined ? { timestamp: line.timestamp } : {};
  const parts = Array.isArray(line.content) ? line.content : typeof line.content === "string" ? [{ text: line.content }] : [];
  if (line.type === "user") {
    const responses = parts.flatMap((p) => (p.functionResponse?.id ? [p.functionResponse.id] : []));
    if (responses.length)
      return [{ type: "user", uuid, ...at, message: { role: "user", content: responses.map((id) => ({ type: "tool_result" as const, tool_use_id: id })) } }];
    const prompt = promptOf(parts);
    return prompt ? [{ type: "user", uuid, ...at, message: { role: "user", content: prompt } }] : [];
  }
  if (line.type === "gemini") {
    // Written again once its tool calls are known: that second line adds the calls only (its text was the first line's).
    if (line.toolCalls?.length) {
      const calls = line.toolCalls.flatMap((c) => (c.id ? [{ type: "tool_use" as const, id: c.id, name: c.name ?? "tool" }] : []));
      return calls.length ? [{ type: "assistant", uuid: `${uuid}:calls`, ...at, message: { role: "assistant", content: calls } }] : [];
    }
    const text = parts.flatMap((p) => (typeof p.text === "string" && p.text !== "" ? [p.text] : [])).join("\n");
    return text ? [{ type: "assistant", uuid, ...at, message: { role: "assistant", content: [{ type: "text", text }] } }] : [];
  }
  return [];
}

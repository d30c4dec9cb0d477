// Reading a Codex session for the event plane (docs/events.md, docs/runtimes.md): Codex writes
// each session as a rollout, `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<thread>.jsonl`, one
// JSON record a line (verified on 0.171.0). This maps a rollout record to the transcript records
// the event plane's mapper reads (Claude's shape: a user prompt, assistant text, a tool call's
// start and end, the end of a turn), so the same mapper serves both runtimes. Tool arguments and
// results are never read: a call keeps its name and id, an output only its id.
import { readdirSync, statSync } from "node:fs";
import path from "node:path";
import type { TranscriptRecord } from "../runtime/index.js";

interface RolloutLine {
  timestamp?: string;
  ordinal?: number;
  type?: string;
  payload?: {
    type?: string;
    id?: string;
    role?: string;
    content?: Array<{ type?: string; text?: string }>;
    name?: string;
    namespace?: string;
    call_id?: string;
    turn_id?: string;
  };
}

/** What Codex puts in a user message that is context, not the person's prompt. */
const CONTEXT_MESSAGE = /^\s*<(environment_context|user_instructions|skills_instructions|turn_aborted)>/;

/** The transcript records one rollout line (parsed JSON) stands for; none for anything else. */
export function codexTranscriptRecords(raw: unknown): TranscriptRecord[] {
  if (!raw || typeof raw !== "object") return [];
  const line = raw as RolloutLine;
  const p = line.payload;
  if (!p) return [];
  const uuid = p.id ?? p.call_id ?? `rollout-${line.ordinal ?? line.timestamp ?? "?"}`;
  const at = line.timestamp !== undefined ? { timestamp: line.timestamp } : {};
  if (line.type === "response_item") {
    if (p.type === "message" && (p.role === "user" || p.role === "assistant")) {
      const text = (p.content ?? []).flatMap((c) => ((c.type === "input_text" || c.type === "output_text") && c.text ? [c.text] : [])).join("\n");
      if (!text || (p.role === "user" && CONTEXT_MESSAGE.test(text))) return [];
      return p.role === "user"
        ? [{ type: "user", uuid, ...at, message: { role: "user", content: text } }]
        : [{ type: "assistant", uuid, ...at, message: { role: "assistant", content: [{ type: "text", text }] } }];
    }
    if (p.type === "function_call" && p.call_id) {
      // An MCP tool is named like Claude names it: mcp__<server>__<tool>.
      const name = p.namespace ? `${p.namespace}__${p.name ?? "tool"}` : (p.name ?? "tool");
      return [{ type: "assistant", uuid, ...at, message: { role: "assistant", content: [{ type: "tool_use", id: p.call_id, name }] } }];
    }
    if (p.type === "function_call_output" && p.call_id)
      return [{ type: "user", uuid, ...at, message: { role: "user", content: [{ type: "tool_result", tool_use_id: p.call_id }] } }];
    return [];
  }
  if (line.type === "event_msg") {
    const end = { type: "assistant" as const, uuid: `${p.turn_id ?? uuid}:end`, ...at };
    if (p.type === "task_complete") return [{ ...end, message: { role: "assistant", content: [], stop_reason: "end_turn" } }];
    if (p.type === "error" || p.type === "stream_error") return [{ ...end, isApiErrorMessage: true, message: { role: "assistant", content: [] } }];
  }
  return [];
}

/** A Codex home's rollouts, newest first. */
export function listRollouts(codexHome: string): Array<{ file: string; thread: string; mtimeMs: number }> {
  const out: Array<{ file: string; thread: string; mtimeMs: number }> = [];
  const walk = (dir: string, depth: number): void => {
    let entries: string[];
    try {
      entries = readdirSync(dir);
    } catch {
      return;
    }
    for (const e of entries) {
      const p = path.join(dir, e);
      if (depth < 3) walk(p, depth + 1);
      else {
        const m = /^rollout-.+-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.jsonl$/.exec(e);
        if (m) out.push({ file: p, thread: m[1]!, mtimeMs: statSync(p).mtimeMs });
      }
    }
  };
  walk(path.join(codexHome, "sessions"), 0);
  return out.sort((a, b) => b.mtimeMs - a.mtimeMs);
}

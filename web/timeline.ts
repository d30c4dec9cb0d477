import type { AgUiFrame } from "../schemas/index.js";
import { renderMarkdown } from "./markdown.js";

/** One line of an agent's timeline, folded from its event plane. Tool arguments never reach the plane. */
export interface TimelineEntry {
  at: number;
  runId: string;
  kind: "run-started" | "run-finished" | "run-failed" | "prompt" | "reply" | "tool-started" | "tool-ended";
  /** The tool's name (tool entries). */
  tool?: string;
  /** Rendered (sanitized) text: a prompt, a reply, or a failure's message. */
  html?: string;
}

/** The most characters of one text message kept while it streams in (a dashboard line, not a transcript). */
const MAX_TEXT = 8_000;

/**
 * Folds one plane's frames, in plane order, into timeline entries: runs, the text of prompts and
 * replies (whole, at their end), tool calls by name, failures. Keeps the open texts and tool names
 * across frames, since a frame may end in the middle of a message.
 */
export class TimelineFolder {
  private readonly texts = new Map<string, { role: string; text: string }>();
  private readonly tools = new Map<string, string>();

  fold(frame: AgUiFrame, fallbackAt: number): TimelineEntry[] {
    const out: TimelineEntry[] = [];
    for (const e of frame.events) {
      const base = { at: e.timestamp ?? fallbackAt, runId: frame.runId };
      switch (e.type) {
        case "RUN_STARTED":
          out.push({ ...base, kind: "run-started" });
          break;
        case "RUN_FINISHED":
          out.push({ ...base, kind: "run-finished" });
          break;
        case "RUN_ERROR":
          out.push({ ...base, kind: "run-failed", html: renderMarkdown(e.message ?? "run failed") });
          break;
        case "TEXT_MESSAGE_START":
          this.texts.set(e.messageId ?? "", { role: e.role ?? "assistant", text: "" });
          break;
        case "TEXT_MESSAGE_CONTENT": {
          const t = this.texts.get(e.messageId ?? "");
          if (t && t.text.length < MAX_TEXT) t.text += (e.delta ?? "").slice(0, MAX_TEXT - t.text.length);
          break;
        }
        case "TEXT_MESSAGE_END": {
          const t = this.texts.get(e.messageId ?? "");
          this.texts.delete(e.messageId ?? "");
          if (t) out.push({ ...base, kind: t.role === "user" ? "prompt" : "reply", html: renderMarkdown(t.text) });
          break;
        }
        case "TOOL_CALL_START":
          this.tools.set(e.toolCallId ?? "", e.toolCallName ?? "tool");
          out.push({ ...base, kind: "tool-started", tool: e.toolCallName ?? "tool" });
          break;
        case "TOOL_CALL_END":
          out.push({ ...base, kind: "tool-ended", tool: this.tools.get(e.toolCallId ?? "") ?? "tool" });
          this.tools.delete(e.toolCallId ?? "");
          break;
      }
    }
    return out;
  }
}

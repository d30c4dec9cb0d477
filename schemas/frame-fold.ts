import type { AgUiFrame } from "./events.js";

/** One thing a person would see in an agent's event plane: a turn's edges, a whole text, a tool call by name. */
export interface FoldedEvent {
  at: number;
  runId: string;
  kind: "run-started" | "run-finished" | "run-failed" | "prompt" | "reply" | "tool-started" | "tool-ended";
  /** The tool's name (tool events). Tool arguments never reach the plane. */
  tool?: string;
  /** A prompt's or reply's whole text (at its end), or a failure's message. */
  text?: string;
}

/**
 * Folds one plane's frames, in plane order, into events a person reads (`cotal console` and
 * `cotal web` word them each their own way). Keeps the open texts and tool names across frames,
 * since a frame may end in the middle of a message; a text keeps at most `maxText` characters.
 */
export class FrameFolder {
  private readonly texts = new Map<string, { role: string; text: string }>();
  private readonly tools = new Map<string, string>();

  constructor(private readonly maxText = 8_000) {}

  fold(frame: AgUiFrame, fallbackAt: number): FoldedEvent[] {
    const out: FoldedEvent[] = [];
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
          out.push({ ...base, kind: "run-failed", text: e.message ?? "run failed" });
          break;
        case "TEXT_MESSAGE_START":
          this.texts.set(e.messageId ?? "", { role: e.role ?? "assistant", text: "" });
          break;
        case "TEXT_MESSAGE_CONTENT": {
          const t = this.texts.get(e.messageId ?? "");
          if (t && t.text.length < this.maxText) t.text += (e.delta ?? "").slice(0, this.maxText - t.text.length);
          break;
        }
        case "TEXT_MESSAGE_END": {
          const t = this.texts.get(e.messageId ?? "");
          this.texts.delete(e.messageId ?? "");
          if (t) out.push({ ...base, kind: t.role === "user" ? "prompt" : "reply", text: t.text });
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

import { FrameFolder, type AgUiFrame } from "../schemas/index.js";
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

/**
 * Folds one plane's frames, in plane order, into timeline entries (the shared fold of
 * schemas/frame-fold.ts), with prompts, replies and failures rendered as sanitized HTML.
 */
export class TimelineFolder {
  private readonly folder = new FrameFolder();

  fold(frame: AgUiFrame, fallbackAt: number): TimelineEntry[] {
    return this.folder.fold(frame, fallbackAt).map(({ text, ...e }) => (text === undefined ? e : { ...e, html: renderMarkdown(text) }));
  }
}

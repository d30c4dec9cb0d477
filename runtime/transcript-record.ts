// The records the event plane reads from a seat's session file (docs/events.md): a subset of
// Claude's transcript lines. A runtime whose CLI keeps its session in another shape maps it to
// these (Codex: codex/transcript.ts; OpenCode and Kilo Code: their plugin writes them,
// opencode-family/journal.ts).

/** A transcript record in the shape the event plane reads. Tool arguments and results have no field here: they are never read. */
export interface TranscriptRecord {
  type: "user" | "assistant";
  uuid: string;
  timestamp?: string;
  isApiErrorMessage?: boolean;
  message: {
    role: "user" | "assistant";
    content: string | Array<{ type: "text"; text: string } | { type: "tool_use"; id: string; name: string } | { type: "tool_result"; tool_use_id: string }>;
    stop_reason?: string;
  };
}

// The deny floor in a pre-tool hook (docs/runtimes.md): a runtime whose CLI has no rule of its
// own to refuse a shell command (Codex) registers its PreToolUse hook as `hook.mjs PreToolUse
// --deny-floor`. The hook then checks the command against the floor (runtime/deny-floor.ts, the
// patterns Claude and OpenCode enforce as rules) before anything reaches the connector, and
// answers a match with the hook protocol's refusal, its reason shown to the model. It needs no
// connector (a run has none; a seat's may be down), and it fails closed: a payload it cannot read
// is refused, not let through.
import { floorRuleFor } from "../runtime/index.js";

/** The hook protocol's refusal of a tool call (Claude's PreToolUse answer, which Codex reads too). */
function refusal(reason: string): Record<string, unknown> {
  return { hookSpecificOutput: { hookEventName: "PreToolUse", permissionDecision: "deny", permissionDecisionReason: reason } };
}

/** The refusal of a payload the floor could not read (the hook timed out reading it, or it is no JSON object). */
export function unreadableRefusal(why: string): Record<string, unknown> {
  return refusal(`Cotal's deny floor could not read this command (${why}), so it does not run. Try again.`);
}

/**
 * The answer refusing a PreToolUse payload's shell command (`tool_input.command`) when the floor
 * matches it; undefined when the floor lets it run, or the call carries no command (not a shell tool).
 */
export function floorRefusal(payload: Record<string, unknown>): Record<string, unknown> | undefined {
  const input = payload.tool_input;
  if (input === undefined || input === null || typeof input !== "object") return undefined;
  const command = (input as { command?: unknown }).command;
  if (command === undefined) return undefined;
  if (typeof command !== "string") return unreadableRefusal("its command is not text");
  const rule = floorRuleFor(command);
  if (rule === undefined) return undefined;
  return refusal(
    `Cotal's deny floor refuses this command: it matches \`${rule}\`, a destructive command an agent of the mesh does not run. ` +
      "Do it another way, or leave it to a person.",
  );
}

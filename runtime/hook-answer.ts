// How the hook command shapes its answer for the CLI that runs it. Claude, Codex and Gemini read
// a hook's context from `hookSpecificOutput.additionalContext`; GitHub Copilot CLI reads the
// Claude-format hook answer's decisions but takes the context only from a top-level
// `additionalContext`. A runtime whose CLI reads it so registers its hooks as `hook.mjs <Event>
// --flat-context`: the answer then carries the context at both places.
import type { PermissionDecision } from "./adapter.js";

/** The argument that has the hook command copy its answer's context to the top level. */
export const FLAT_CONTEXT_HOOK_FLAG = "--flat-context";

/** A hook answer with `hookSpecificOutput.additionalContext` also at its top level (unchanged when it has none). */
export function withFlatContext(reply: unknown): unknown {
  if (!reply || typeof reply !== "object" || Array.isArray(reply)) return reply;
  const ctx = (reply as { hookSpecificOutput?: { additionalContext?: unknown } }).hookSpecificOutput?.additionalContext;
  return typeof ctx === "string" ? { ...reply, additionalContext: ctx } : reply;
}

/**
 * Claude Code's PermissionRequest decision, which Codex (0.171.0, its PermissionRequestDecisionWire)
 * reads the same: `behavior` allow or deny, with `message` for the model on a deny.
 */
export const permissionRequestReply = (decision: PermissionDecision): Record<string, unknown> => ({
  hookSpecificOutput: { hookEventName: "PermissionRequest", decision },
});

// Presence derived from Claude hooks (pure): what each hook event means for status,
// condition, activity and progress. Activity carries a tool name only, never arguments.
import type { PresencePatch } from "../broker/index.js";
import type { Condition, ConditionCode, PresenceStatus } from "../schemas/index.js";
import type { HookEvent, HookPayload } from "./protocol.js";

/** What the connector knows of the session between hooks. */
export interface TurnState {
  /** A turn is running (between UserPromptSubmit / a main-agent tool call and Stop). */
  turnOpen: boolean;
  status: PresenceStatus;
}

/** StopFailure `error` values → presence condition. Unknown values read as `failed`. */
export const STOP_FAILURE_CONDITIONS: Readonly<Record<string, ConditionCode>> = {
  rate_limit: "rate_limit",
  overloaded: "overloaded",
  authentication_failed: "auth",
  oauth_org_not_allowed: "auth",
  verification_required: "auth",
  cloud_credential_error: "auth",
  billing_error: "billing",
  account_on_hold: "billing",
  invalid_request: "request",
  model_not_found: "model",
  server_error: "server",
  max_output_tokens: "context",
  context_window_exceeded: "context",
  prompt_too_long: "context",
  unknown: "failed",
};

export function stopFailureCondition(error: string | undefined): ConditionCode {
  return (error !== undefined && STOP_FAILURE_CONDITIONS[error]) || "failed";
}

/** A condition reported by a hook: its code, `source` naming the hook, and the hook's own word for it. */
function fromHook(event: HookEvent, code: ConditionCode, word?: string): Condition {
  return { code, source: `hook:${event}`, ...(word ? { message: word.slice(0, 200) } : {}) };
}

/** Notification types that mean the session waits for a person, and why. */
export const WAITING_NOTIFICATIONS: Readonly<Record<string, ConditionCode>> = {
  permission_prompt: "approval",
  worker_permission_prompt: "approval",
  elicitation_dialog: "input",
  elicitation_url_dialog: "input",
  agent_needs_input: "input",
};

/** Presence activity of a turn the manager's terminal wake started. */
export const WOKEN_ACTIVITY = "woken by the manager (terminal)";

/** Longest activity string presence accepts. */
const MAX_ACTIVITY = 200;

/**
 * The presence change a hook implies, and the turn state after it. `patch` is undefined when
 * the hook changes nothing (a subagent's tool call, an informational notification).
 */
export function presenceFromHook(event: HookEvent, p: HookPayload, s: TurnState): { patch?: PresencePatch; turnOpen: boolean } {
  switch (event) {
    case "SessionStart":
      // A compaction fires SessionStart inside a turn: the session is not idle then.
      return s.turnOpen ? { turnOpen: true } : { patch: { status: "idle", condition: null, activity: null }, turnOpen: false };
    case "UserPromptSubmit":
      // A turn the manager started by typing its wake prompt says so until the first tool call.
      return { patch: { status: "working", condition: null, activity: p.manager_wake ? WOKEN_ACTIVITY : null, active: true }, turnOpen: true };
    case "PreToolUse": {
      // A subagent's tool call is progress, but says nothing of the main session's status.
      if (p.agent_id) return { patch: { active: true }, turnOpen: s.turnOpen };
      const activity = p.tool_name ? p.tool_name.slice(0, MAX_ACTIVITY) : null;
      return { patch: { status: "working", condition: null, activity, active: true }, turnOpen: true };
    }
    case "PermissionRequest":
      // Fired the moment Claude shows a permission dialog (the permission_prompt notification
      // follows only after 6 s): the session now waits for a person to approve.
      return { patch: { status: "waiting", condition: fromHook(event, "approval", p.tool_name) }, turnOpen: s.turnOpen };
    case "Notification": {
      // Claude sends idle_prompt only when the session sits idle at its input (no turn running, no
      // dialog open) past its idle threshold (60 s by default). It is the one signal after an
      // interrupted turn (Escape at a permission dialog fires no Stop): clear a stale waiting or
      // working. An idle seat keeps its condition (a failure's cause stays visible).
      if (p.notification_type === "idle_prompt") {
        return s.status === "idle" ? { turnOpen: false } : { patch: { status: "idle", condition: null, activity: null }, turnOpen: false };
      }
      const code = p.notification_type ? WAITING_NOTIFICATIONS[p.notification_type] : undefined;
      return code ? { patch: { status: "waiting", condition: fromHook(event, code, p.notification_type) }, turnOpen: s.turnOpen } : { turnOpen: s.turnOpen };
    }
    case "Stop":
      return { patch: { status: "idle", condition: null, activity: null, active: true }, turnOpen: false };
    case "StopFailure":
      return { patch: { status: "idle", condition: fromHook(event, stopFailureCondition(p.error), p.error), activity: null }, turnOpen: false };
    case "SessionEnd":
      return { patch: { status: "offline", activity: null }, turnOpen: false };
  }
}

// The hook ⇄ connector control protocol: newline-delimited JSON frames over one unix socket
// connection per hook run. Shared by the hook command, so it uses zod/mini (small, fast to load).
import * as z from "zod/mini";
import { MANAGER_WAKE_PROMPT } from "../runtime/index.js";

/** Protocol version carried by every frame. */
export const PROTOCOL_VERSION = 1;

/** Largest frame either side accepts, in bytes. Hook payloads are relayed trimmed, so this is ample. */
export const MAX_FRAME_BYTES = 256 * 1024;

/** The Claude hook events the connector understands. */
export const HOOK_EVENTS = [
  "SessionStart",
  "UserPromptSubmit",
  "PreToolUse",
  "PermissionRequest",
  "Notification",
  "Stop",
  "StopFailure",
  "SessionEnd",
] as const;
export type HookEvent = (typeof HOOK_EVENTS)[number];

export function isHookEvent(e: string): e is HookEvent {
  return (HOOK_EVENTS as readonly string[]).includes(e);
}

/**
 * The fields of a Claude hook payload the connector reads. Everything else (tool arguments,
 * prompts, assistant text) is dropped by the hook before relaying: the connector never sees it.
 */
export const HookPayload = z.object({
  session_id: z.optional(z.string()),
  hook_event_name: z.string(),
  transcript_path: z.optional(z.string()),
  cwd: z.optional(z.string()),
  /** SessionStart: startup | resume | clear | compact | fork. */
  source: z.optional(z.string()),
  /** SessionStart: the model the session runs (for the presence card's `meta.model`). */
  model: z.optional(z.string()),
  /** PreToolUse, PermissionRequest: the tool's name (never its input). */
  tool_name: z.optional(z.string()),
  /** Present only when the hook fires inside a subagent. */
  agent_id: z.optional(z.string()),
  /** Notification: permission_prompt, idle_prompt, elicitation_dialog, … */
  notification_type: z.optional(z.string()),
  /** StopFailure: rate_limit, overloaded, authentication_failed, … */
  error: z.optional(z.string()),
  /** SessionEnd: why the session ended. */
  reason: z.optional(z.string()),
  stop_hook_active: z.optional(z.boolean()),
  /** UserPromptSubmit: the prompt is the manager's wake prompt (derived by the hook; the prompt itself is never relayed). */
  manager_wake: z.optional(z.boolean()),
  /**
   * PermissionRequest only: the tool's input as the CLI shows it in its dialog (derived by the hook,
   * askInputOf), which a person answering the ask over the mesh must see. No other hook relays input.
   */
  ask_input: z.optional(z.record(z.string(), z.string())),
});
export type HookPayload = z.infer<typeof HookPayload>;

/** The prompt a Cotal manager types into an idle seat that holds mail (one definition, in the runtime seam). */
export { MANAGER_WAKE_PROMPT };

/** Keys of HookPayload: the only fields a hook relays. */
export const RELAYED_FIELDS = [
  "session_id",
  "hook_event_name",
  "transcript_path",
  "cwd",
  "source",
  "model",
  "tool_name",
  "agent_id",
  "notification_type",
  "error",
  "reason",
  "stop_hook_active",
  "manager_wake",
] as const;

/** Longest value of one input field an ask carries, characters (MAX_ASK_INPUT in schemas/approvals.ts; kept here so the hook stays light). */
export const ASK_INPUT_CHARS = 4_000;
/** Most input fields an ask carries. */
const ASK_INPUT_FIELDS = 16;

/**
 * A tool's input as its permission dialog shows it, for a person answering over the mesh: each
 * top-level field as text (a string as is, anything else as JSON), each cut to ASK_INPUT_CHARS.
 * A Bash call is its `command` and `description`.
 */
export function askInputOf(input: unknown): Record<string, string> {
  if (input === null || typeof input !== "object" || Array.isArray(input)) return {};
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(input as Record<string, unknown>).slice(0, ASK_INPUT_FIELDS)) {
    if (!/^[A-Za-z0-9_.-]{1,64}$/.test(k) || v === undefined) continue;
    const text = typeof v === "string" ? v : JSON.stringify(v);
    out[k] = text.length > ASK_INPUT_CHARS ? `${text.slice(0, ASK_INPUT_CHARS - 1)}…` : text;
  }
  return out;
}

/** Keep only the relayed fields of a raw hook payload (and only if they have the expected type). */
export function trimPayload(raw: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  // Only a permission ask carries the tool's input: the person answering it must see what it runs.
  if (raw.hook_event_name === "PermissionRequest") out.ask_input = askInputOf(raw.tool_input);
  // Only whether a prompt is the manager's wake prompt leaves the hook, never the prompt.
  if (raw.hook_event_name === "UserPromptSubmit" && typeof raw.prompt === "string") raw = { ...raw, manager_wake: raw.prompt.trim() === MANAGER_WAKE_PROMPT };
  for (const k of RELAYED_FIELDS) {
    const v = raw[k];
    if (typeof v === "string" ? v.length <= 4096 : typeof v === "boolean") out[k] = v;
  }
  return out;
}

/** Hook → connector: one hook run. */
export const HookRequest = z.object({
  v: z.literal(PROTOCOL_VERSION),
  token: z.string(),
  event: z.string(),
  payload: HookPayload,
  /** The hook's own pid and its ancestors' (nearest first): pairs the hook with its session's connector. */
  pids: z.array(z.number()),
});
export type HookRequest = z.infer<typeof HookRequest>;

/** Connector → hook: the reply to print, and a receipt id when the reply hands mail over. */
export const HookResponse = z.union([
  z.object({
    v: z.literal(PROTOCOL_VERSION),
    ok: z.literal(true),
    reply: z.record(z.string(), z.unknown()),
    /** Present when the reply carries mail: confirm it once the reply is written. */
    receipt: z.optional(z.string()),
  }),
  z.object({ v: z.literal(PROTOCOL_VERSION), ok: z.literal(false), error: z.string() }),
]);
export type HookResponse = z.infer<typeof HookResponse>;

/** Hook → connector, after the reply was written to stdout: the batch may be acked. */
export const HookConfirm = z.object({
  v: z.literal(PROTOCOL_VERSION),
  written: z.literal(true),
  receipt: z.string(),
});
export type HookConfirm = z.infer<typeof HookConfirm>;

/** The launch-material fields a hook needs to find its connector (the file holds more). */
export const HookLaunchView = z.object({
  space: z.string(),
  name: z.string(),
  owner: z.optional(z.string()),
  controlToken: z.string(),
  controlDir: z.optional(z.string()),
});

/** Parse a JSON line; undefined when it is not JSON. */
export function parseLine(line: string): unknown {
  try {
    return JSON.parse(line) as unknown;
  } catch {
    return undefined;
  }
}

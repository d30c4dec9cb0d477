// The Claude hooks the connector relies on, declared once. The plugin generator renders these
// into hooks/hooks.json; tests and hand-made settings files use renderHooksSettings().
import type { HookEvent } from "./protocol.js";

/** How a hook reaches the connector. */
export type HookTransport = "command" | "http";

export interface HookSpec {
  event: HookEvent;
  /** Claude matcher (tool name regex for PreToolUse); absent = every occurrence. */
  matcher?: string;
  /**
   * Transports this hook may use, preferred first. Draining hooks are command-only: they must
   * confirm their reply was written before the connector acks, which an http hook cannot.
   * Claude does not fire SessionStart as an http hook at all.
   */
  transports: readonly HookTransport[];
  /** Claude's timeout for the hook, seconds (Claude kills a command hook after it). */
  timeoutSec: number;
  /** How long the hook waits for the connector before printing an empty reply, ms. */
  budgetMs: number;
  /** Drains waiting mail into additionalContext. */
  drains: boolean;
  /** What the connector does with it. */
  purpose: string;
}

/** Every hook the connector uses. */
export const HOOKS: readonly HookSpec[] = [
  {
    event: "SessionStart",
    transports: ["command"],
    timeoutSec: 15,
    // Claude starts the connector and this hook at about the same time: wait for it to join.
    budgetMs: 8_000,
    drains: true,
    purpose: "presence idle (unless a turn is open); attention reset to open; drain waiting mail into context",
  },
  {
    event: "UserPromptSubmit",
    transports: ["command"],
    timeoutSec: 15,
    budgetMs: 5_000,
    drains: true,
    purpose: "presence working; drain waiting mail into context",
  },
  {
    event: "PreToolUse",
    transports: ["command", "http"],
    timeoutSec: 5,
    budgetMs: 1_500,
    drains: false,
    purpose: "presence working, activity = tool name (main agent only)",
  },
  {
    event: "PermissionRequest",
    transports: ["command"],
    // The connector asks the mesh and waits for a person's answer (at most 9 minutes, its bound):
    // the hook waits a little longer, and Claude longer still.
    timeoutSec: 600,
    budgetMs: 580_000,
    drains: false,
    // The reply is a person's decision from the mesh, or empty (no decision: Claude's own dialog stands).
    purpose: "presence waiting with condition approval; the ask goes to the mesh (cotal approvals) and a person's allow or deny comes back",
  },
  {
    event: "Notification",
    transports: ["command"],
    timeoutSec: 5,
    budgetMs: 1_500,
    drains: false,
    purpose: "presence waiting with condition approval or input; idle_prompt clears a stale waiting or working",
  },
  {
    event: "Stop",
    transports: ["command", "http"],
    timeoutSec: 5,
    budgetMs: 1_500,
    drains: false,
    purpose: "presence idle; one wake for mail that waited through the turn",
  },
  {
    event: "StopFailure",
    transports: ["command"],
    timeoutSec: 5,
    budgetMs: 1_500,
    drains: false,
    purpose: "presence idle with the failure's condition",
  },
  {
    event: "SessionEnd",
    transports: ["command"],
    timeoutSec: 3,
    budgetMs: 1_000,
    drains: false,
    purpose: "presence offline",
  },
];

/** The spec of one event. */
export function hookSpec(event: HookEvent): HookSpec | undefined {
  return HOOKS.find((h) => h.event === event);
}

/** A Claude settings `hooks` section. */
export type ClaudeHooksSection = Record<string, Array<{ matcher?: string; hooks: Array<Record<string, unknown>> }>>;

export interface RenderHooksOptions {
  /** The shell command running the hook for one event (e.g. `node /path/dist/hook.mjs SessionStart`). */
  command: (event: HookEvent) => string;
  /**
   * Use http hooks where the registry allows them: `url` is the connector's loopback base URL,
   * `tokenEnv` the environment variable holding the control token (interpolated by Claude).
   */
  http?: { url: string; tokenEnv: string };
}

/** Render the registry as a Claude settings `hooks` section. */
export function renderHooksSettings(opts: RenderHooksOptions): ClaudeHooksSection {
  const out: ClaudeHooksSection = {};
  for (const h of HOOKS) {
    const useHttp = opts.http && h.transports.includes("http");
    const hook = useHttp
      ? {
          type: "http",
          url: `${opts.http!.url.replace(/\/$/, "")}/hook/${h.event}`,
          headers: { Authorization: `Bearer $${opts.http!.tokenEnv}` },
          allowedEnvVars: [opts.http!.tokenEnv],
          timeout: h.timeoutSec,
        }
      : { type: "command", command: opts.command(h.event), timeout: h.timeoutSec };
    out[h.event] = [{ ...(h.matcher ? { matcher: h.matcher } : {}), hooks: [hook] }];
  }
  return out;
}

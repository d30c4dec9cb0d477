// How an agent CLI's in-process plugin or extension (OpenCode's plugin, pi's extension) tells the
// connector about its events: it runs the same hook command Claude and Codex run (`node hook.mjs
// <Event>`, a Claude-shaped payload on stdin), so the connector's hand-over, ack and presence rules
// are the ones every runtime has. A hook confirms (and the connector acks the mail it carries)
// only after it wrote its answer to us. Node built-ins only: it is bundled into those plugins.
import { spawn } from "node:child_process";

/** Where the hook command is: the Node.js executable and the connector's hook bundle (hook.mjs). */
export interface HookCommand {
  node: string;
  hook: string;
}

/** A hook answer's additionalContext (its last JSON line's), or undefined. */
export function contextOf(stdout: string): string | undefined {
  for (const line of stdout.split("\n").reverse()) {
    if (!line.trim().startsWith("{")) continue;
    try {
      const reply = JSON.parse(line) as { hookSpecificOutput?: { additionalContext?: unknown } };
      const ctx = reply.hookSpecificOutput?.additionalContext;
      return typeof ctx === "string" && ctx.trim() !== "" ? ctx : undefined;
    } catch {
      return undefined;
    }
  }
  return undefined;
}

/** Longest a hook command may take before it is ended (its own budget is shorter: it always answers). */
const HOOK_LIMIT_MS = 20_000;
/** The hooks that hand mail over, and how long they may wait for the connector (the CLI waits for its plugin; a loaded host is slow). */
const DRAINS = ["SessionStart", "UserPromptSubmit"];
const DRAIN_BUDGET_MS = 15_000;

/** Run the connector's hook command for one event; resolves with its additionalContext (never rejects). */
export function relayHook(o: HookCommand, event: string, payload: Record<string, unknown>): Promise<string | undefined> {
  return new Promise((resolve) => {
    let out = "";
    let child;
    try {
      // A drain may wait for the connector's backlog: give it the plugin's own limit, not Claude's shorter hook budget.
      const env = DRAINS.includes(event) ? { ...process.env, COTAL_HOOK_BUDGET_MS: String(DRAIN_BUDGET_MS) } : process.env;
      child = spawn(o.node, [o.hook, event], { stdio: ["pipe", "pipe", "ignore"], env });
    } catch {
      resolve(undefined);
      return;
    }
    const timer = setTimeout(() => child.kill("SIGKILL"), HOOK_LIMIT_MS);
    child.stdout.setEncoding("utf8").on("data", (s: string) => (out += s));
    child.on("error", () => {
      clearTimeout(timer);
      resolve(undefined);
    });
    child.on("close", () => {
      clearTimeout(timer);
      resolve(contextOf(out));
    });
    child.stdin.on("error", () => undefined);
    child.stdin.end(JSON.stringify({ ...payload, hook_event_name: event }));
  });
}

// The unattended posture of a GitHub Copilot CLI seat or run (docs/runtimes.md), in Copilot's own
// permission flags (1.0.102: `--allow-tool` / `--deny-tool` patterns `kind(argument)`, a denial
// always wins). Copilot asks a person before the shell, file writes and URL access; unattended,
// nobody answers, so what is not allowed is denied instead (a run's `-p` would deny it anyway; a
// seat's TUI would stop on the question):
//
// - Without an allow-list: `shell`, `write` and `url` are denied; reads in the folder, Copilot's
//   own tools that never ask, and Cotal's MCP server run.
// - An allow-list (`allowedTools`, Claude's rule names) allows what it names, whole kinds only
//   (Copilot would still ask about a command outside a prefix), and denies the rest of the three.
// - Cotal's MCP server (`cotal`) is always allowed; `--no-ask-user` takes away its question tool.
// - The deny floor (runtime/deny-floor.ts) is a PreToolUse hook, `hook.mjs PreToolUse
//   --deny-floor`, whose Claude-format refusal Copilot honours: it holds even where the shell is allowed.
// Never `--allow-all-tools` or `--allow-all` (Copilot's approve-everything), nor COPILOT_ALLOW_ALL (which also trusts the
// folder's hooks and MCP servers).
import { copilotLaunchError } from "./errors.js";

/** Cotal's MCP server's name in mcp-config.json: its tools reach the model as `cotal-<tool>`. */
export const MCP_NAME = "cotal";
/** The posture's name, as `ps` shows it. */
export const POSTURE_NAME = "asks denied, deny floor hook";
/** The kinds Copilot asks a person about. */
const ASKING = ["shell", "write", "url"] as const;

/** Claude's tool names (allowedTools rules) → the Copilot permission kind they need (undefined: it never asks). */
const TOOLS: Readonly<Record<string, (typeof ASKING)[number] | undefined>> = {
  Bash: "shell",
  Edit: "write",
  MultiEdit: "write",
  Write: "write",
  NotebookEdit: "write",
  WebFetch: "url",
  Read: undefined,
  Grep: undefined,
  Glob: undefined,
  LS: undefined,
};

/** The permission flags of an allow-list (empty: Copilot's asking kinds denied). */
export function postureArgs(allowedTools: readonly string[]): string[] {
  const allowed = new Set<string>([MCP_NAME]);
  for (const rule of allowedTools) {
    const mcp = /^mcp__([A-Za-z0-9_-]+?)(?:__(\*|[A-Za-z0-9_-]+))?$/.exec(rule);
    if (mcp) {
      if (mcp[1] === MCP_NAME) continue; // Cotal's server is allowed whole
      allowed.add(mcp[2] && mcp[2] !== "*" ? `${mcp[1]}(${mcp[2]})` : mcp[1]!);
      continue;
    }
    const m = /^([A-Za-z]+)(?:\((.+)\))?$/.exec(rule.trim());
    if (!m || !(m[1]! in TOOLS))
      throw copilotLaunchError(`The allowedTools rule ${JSON.stringify(rule)} names no tool GitHub Copilot CLI has.`, {
        remedy: `For runtime copilot, allowedTools may name ${Object.keys(TOOLS).join(", ")} and mcp__<server>[__<tool>].`,
      });
    if (m[2] !== undefined && m[2] !== "*")
      throw copilotLaunchError(
        `The allowedTools rule ${JSON.stringify(rule)} has a pattern; unattended, Copilot would ask a person about what it leaves out.`,
        {
          remedy: `Name ${m[1]} without a pattern for runtime copilot (the deny floor still holds).`,
        },
      );
    const kind = TOOLS[m[1]!];
    if (kind) allowed.add(kind);
  }
  const denied = ASKING.filter((k) => !allowed.has(k));
  return ["--no-ask-user", ...[...allowed].flatMap((a) => ["--allow-tool", a]), ...denied.flatMap((d) => ["--deny-tool", d])];
}

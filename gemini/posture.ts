// The unattended permission posture of a Gemini CLI seat or run (docs/runtimes.md), in Gemini's
// own policy engine (0.61.0): a TOML policy file in the private home's user tier
// (`<home>/.gemini/policies/`), whose rules outrank the CLI's built-in defaults (tier + priority/1000).
//
// - Without an allow-list the defaults decide (read-only tools run), except that what they would
//   ask a person is refused (nobody is there to answer): the shell, file writes and edits, web
//   fetches, skills, its question tool and plan-mode switches; a tool of an MCP server that is not
//   trusted (only Cotal's is) is refused too.
// - An allow-list (`allowedTools`, Claude's rule names) becomes a deny of every tool and one allow
//   rule each; Cotal's own MCP server is trusted, so its tools always run.
// - The deny floor (runtime/deny-floor.ts) is the highest rule: shell-command patterns as Gemini's
//   `commandRegex`, checked by the CLI against the whole command and each part of a compound one.
// Never `--yolo` / `--approval-mode yolo` (Gemini's "approve everything").
import { DENY_FLOOR_COMMANDS } from "../runtime/index.js";
import { geminiLaunchError } from "./errors.js";

/** Cotal's MCP server's name in settings.json: its tools reach the model as `mcp_cotal_<tool>`. */
export const MCP_NAME = "cotal";
/** The posture's name, as `ps` shows it. */
export const POSTURE_NAME = "policy: asks refused, deny floor";
/** Gemini's shell tool. */
const SHELL = "run_shell_command";

/** What Gemini 0.61.0's default policies ask a person about (policies/*.toml, `decision = "ask_user"`). */
export const DEFAULT_ASKS = [
  "run_shell_command",
  "write_file",
  "replace",
  "web_fetch",
  "activate_skill",
  "ask_user",
  "enter_plan_mode",
  "exit_plan_mode",
] as const;

/** Claude's tool names (allowedTools rules) → Gemini's tools. */
const TOOLS: Readonly<Record<string, readonly string[]>> = {
  Bash: [SHELL],
  Read: ["read_file", "read_many_files"],
  Edit: ["replace"],
  MultiEdit: ["replace"],
  Write: ["write_file"],
  Glob: ["glob"],
  Grep: ["grep_search"],
  LS: ["list_directory"],
  WebFetch: ["web_fetch"],
  WebSearch: ["google_web_search"],
  TodoWrite: ["write_todos"],
};

/** One policy rule, as the TOML file says it. */
export interface PolicyRule {
  toolName: string | string[];
  decision: "allow" | "deny";
  priority: number;
  commandPrefix?: string;
  commandRegex?: string;
  denyMessage?: string;
}

/** One Claude allow rule → the Gemini rules that allow it; refused when Gemini has no such tool. */
export function allowRulesOf(rule: string): PolicyRule[] {
  const mcp = /^mcp__([A-Za-z0-9_-]+?)(?:__(\*|[A-Za-z0-9_-]+))?$/.exec(rule);
  if (mcp) return [{ toolName: `mcp_${mcp[1]}_${mcp[2] ?? "*"}`, decision: "allow", priority: ALLOW }];
  const m = /^([A-Za-z]+)(?:\((.+)\))?$/.exec(rule.trim());
  const tools = m ? TOOLS[m[1]!] : undefined;
  if (!m || !tools)
    throw geminiLaunchError(`The allowedTools rule ${JSON.stringify(rule)} names no tool Gemini CLI has.`, {
      remedy: `For runtime gemini, allowedTools may name ${Object.keys(TOOLS).join(", ")} (Bash with a command prefix in parentheses) and mcp__<server>[__<tool>].`,
    });
  const pattern = m[2];
  if (pattern === undefined || pattern === "*") return tools.map((t) => ({ toolName: t, decision: "allow", priority: ALLOW }));
  if (m[1] !== "Bash")
    throw geminiLaunchError(`The allowedTools rule ${JSON.stringify(rule)} has a pattern; Gemini's policy narrows only shell commands.`, {
      remedy: `Name ${m[1]} without a pattern for runtime gemini.`,
    });
  const prefix = pattern.replace(/:\*$/, "").replace(/ \*$/, "");
  if (prefix.includes("*"))
    throw geminiLaunchError(`The allowedTools rule ${JSON.stringify(rule)} has a wildcard inside; Gemini's policy allows a command by its prefix.`, {
      remedy: "Write it as Bash(<command prefix>:*).",
    });
  return [{ toolName: SHELL, decision: "allow", priority: ALLOW, commandPrefix: prefix }];
}

// Priorities inside the user tier (0-999): the floor above every allow, allows above the refusals.
const FLOOR = 999;
const ALLOW = 500;
const REFUSE = 10;
const REFUSE_ALL = 5;

/** A JSON-encoded command text as a regex: JSON's escapes, then regex escapes; runs of spaces as one or more. */
function literal(text: string): string {
  return JSON.stringify(text)
    .slice(1, -1)
    .replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")
    .replace(/ +/g, " +");
}

/**
 * A floor pattern (`*` any characters, a trailing ` *` also the bare command) as Gemini
 * `commandRegex`es. Gemini matches them against the call's arguments as JSON
 * (`"command":"<regex>`), so the end of the command is its closing quote (and a NUL). No groups: Gemini refuses
 * a pattern with a quantified group (its ReDoS check).
 */
export function floorRegexes(pattern: string): string[] {
  const bare = pattern.endsWith(" *");
  const body = (bare ? pattern.slice(0, -2) : pattern).split("*").map(literal).join(".*");
  // Gemini wraps each top-level argument in NUL characters: the command's end is `"` then NUL.
  const end = `${body}"\\x00`;
  if (bare) return [end, `${body} .*`];
  return pattern.endsWith("*") ? [body] : [end];
}

const FLOOR_MESSAGE =
  "Cotal's deny floor refuses this command: a destructive command an agent of the mesh does not run. Do it another way, or leave it to a person.";

/** The posture's rules for an allow-list (empty: Gemini's defaults decide, their asks refused). */
export function postureRules(allowedTools: readonly string[]): PolicyRule[] {
  const rules: PolicyRule[] = [];
  if (allowedTools.length) rules.push({ toolName: "*", decision: "deny", priority: REFUSE_ALL });
  rules.push({ toolName: [...DEFAULT_ASKS], decision: "deny", priority: REFUSE });
  // An MCP server the CLI does not trust would ask: refused (Cotal's is trusted, so its tools run).
  rules.push({ toolName: "mcp_*", decision: "deny", priority: REFUSE });
  for (const r of allowedTools) rules.push(...allowRulesOf(r));
  for (const p of DENY_FLOOR_COMMANDS)
    for (const re of floorRegexes(p)) rules.push({ toolName: SHELL, decision: "deny", priority: FLOOR, commandRegex: re, denyMessage: FLOOR_MESSAGE });
  return rules;
}

/** The rules as Gemini's policy TOML (a TOML basic string takes JSON's escapes). */
export function renderPolicy(rules: readonly PolicyRule[]): string {
  const str = (s: string): string => JSON.stringify(s);
  const lines = ["# Written by Cotal for one launch (docs/runtimes.md): the unattended posture and the deny floor."];
  for (const r of rules) {
    lines.push("", "[[rule]]", `toolName = ${Array.isArray(r.toolName) ? `[${r.toolName.map(str).join(", ")}]` : str(r.toolName)}`);
    if (r.commandPrefix !== undefined) lines.push(`commandPrefix = ${str(r.commandPrefix)}`);
    if (r.commandRegex !== undefined) lines.push(`commandRegex = ${str(r.commandRegex)}`);
    lines.push(`decision = ${str(r.decision)}`, `priority = ${r.priority}`);
    if (r.denyMessage !== undefined) lines.push(`deny_message = ${str(r.denyMessage)}`);
  }
  return `${lines.join("\n")}\n`;
}

// The unattended permission posture of an OpenCode-family seat or run (docs/runtimes.md), in the
// CLI's own permission rules. OpenCode 1.18.33 (and Kilo Code 7.7.7, its fork) evaluates a tool
// call against an agent's rules and the last matching rule wins (`*` matches anything, a trailing
// ` *` also the bare command). Cotal runs every launch as its own primary agent, `cotal`, whose
// rules the CLI appends after its defaults and the user's own: so Cotal's rules come last and win.
//
// - Without an allow-list the user's and the CLI's own rules decide, except that what would ask a
//   person is refused (nobody is there to answer): the family's default asks (doom-loop and
//   outside-the-workspace checks, `.env` reads, its question tool), those a member adds
//   (`moreAsks`), and the asking rules of the user's own config. Anything still left to ask (a
//   project's config, a default ask by pattern such as Kilo's shell commands) is refused by
//   Cotal's plugin in a managed seat, and by `<cli> run` itself in a run.
// - An allow-list (`allowedTools`, Claude's rule names) becomes `"*": "deny"` and one allow rule
//   each; Cotal's own MCP tools are always allowed.
// - The deny floor (runtime/deny-floor.ts) comes last of all, as `bash` deny rules: no rule of the
//   user's or the agent file's can lift it. Never `--auto` (the family's "approve everything").
import { DENY_FLOOR_COMMANDS } from "../deny-floor.js";
import type { OpencodeFamily } from "./family.js";
import type { AskRule } from "./user-config.js";

/** The agent Cotal's launches run as. */
export const COTAL_AGENT = "cotal";
/** Cotal's MCP server's name in the config: its tools reach the model as `cotal_<tool>`. */
export const MCP_NAME = "cotal";
/** The family's built-in subagents: the only ones a Cotal launch may call, and they get Cotal's rules too. */
export const SUBAGENTS = ["general", "explore"] as const;
/** The posture's name, as `ps` shows it. */
export const POSTURE_NAME = "agent cotal: asks refused, deny floor";

/** One rule: a permission (tool), its action, for every pattern or for some. */
export type PermissionRules = Record<string, string | Record<string, string>>;

/** Claude's tool names (allowedTools rules) → the family's permission names. */
const TOOLS: Readonly<Record<string, string>> = {
  Bash: "bash",
  Read: "read",
  Edit: "edit",
  Write: "edit",
  MultiEdit: "edit",
  NotebookEdit: "edit",
  Glob: "glob",
  Grep: "grep",
  LS: "list",
  WebFetch: "webfetch",
  WebSearch: "websearch",
  TodoWrite: "todowrite",
  Task: "task",
};

/** Add `action` for `permission` (all patterns, or one) to `rules`, keeping earlier patterns of it. */
function put(rules: PermissionRules, permission: string, action: string, pattern?: string): void {
  if (pattern === undefined) {
    rules[permission] = action;
    return;
  }
  const now = rules[permission];
  rules[permission] = { ...(typeof now === "string" ? { "*": now } : (now ?? {})), [pattern]: action };
}

/** One Claude allow rule → the permission and pattern it allows in `d`; refused when `d` has no such tool. */
export function allowRuleOf(d: OpencodeFamily, rule: string): { permission: string; pattern?: string } {
  const mcp = /^mcp__([A-Za-z0-9_-]+?)(?:__(\*|[A-Za-z0-9_-]+))?$/.exec(rule);
  if (mcp) return { permission: `${mcp[1]}_${mcp[2] ?? "*"}` };
  const m = /^([A-Za-z]+)(?:\((.+)\))?$/.exec(rule.trim());
  const permission = m ? TOOLS[m[1]!] : undefined;
  if (!m || !permission)
    throw d.fail(`The allowedTools rule ${JSON.stringify(rule)} names no tool ${d.label} has.`, {
      remedy: `For runtime ${d.runtime}, allowedTools may name ${Object.keys(TOOLS).join(", ")} (with a pattern in parentheses) and mcp__<server>[__<tool>].`,
    });
  const pattern = m[2]?.replace(/:\*$/, " *");
  return pattern === undefined ? { permission } : { permission, pattern };
}

/**
 * The `cotal` agent's permission rules in `d` for an allow-list (empty: the CLI's and the user's
 * own rules decide), with the user's own asking rules (`userAsks`) turned into denials.
 */
export function postureRules(d: OpencodeFamily, allowedTools: readonly string[], userAsks: readonly AskRule[] = []): PermissionRules {
  const rules: PermissionRules = {};
  if (allowedTools.length) rules["*"] = "deny";
  // What the user's config would ask a person is refused (nobody is there); the agent file's allow-list may still allow it.
  for (const a of userAsks) put(rules, a.permission, "deny", a.pattern);
  if (allowedTools.length) {
    for (const r of allowedTools) {
      const { permission, pattern } = allowRuleOf(d, r);
      put(rules, permission, "allow", pattern);
    }
  }
  put(rules, `${MCP_NAME}_*`, "allow");
  // The CLI's own defaults ask for these; unattended, they are refused.
  for (const p of ["doom_loop", "question", "plan_enter", "plan_exit", ...d.moreAsks]) put(rules, p, "deny");
  put(rules, "external_directory", "deny", "*");
  // A subagent runs with its own agent's rules: only the built-in ones, which carry these rules too (launch.ts).
  const taskAllowed = !allowedTools.length || allowedTools.some((r) => /^Task(\(|$)/.test(r));
  put(rules, "task", "deny", "*");
  if (taskAllowed) for (const a of SUBAGENTS) put(rules, "task", "allow", a);
  for (const env of ["*.env", "*.env.*"]) put(rules, "read", "deny", env);
  for (const command of DENY_FLOOR_COMMANDS) put(rules, "bash", "deny", command);
  return rules;
}

// The unattended permission posture of an OpenCode seat or run (docs/runtimes.md), in OpenCode's
// own permission rules. OpenCode 1.18.33 evaluates a tool call against an agent's rules and the
// last matching rule wins (`*` matches anything, a trailing ` *` also the bare command). Cotal
// runs every launch as its own primary agent, `cotal`, whose rules OpenCode appends after its
// defaults and the user's own: so Cotal's rules come last and win.
//
// - Without an allow-list the user's and OpenCode's own rules decide, except that what would ask a
//   person is refused (nobody is there to answer): OpenCode's default asks (doom-loop and
//   outside-the-workspace checks, `.env` reads, its question tool) and the asking rules of the
//   user's own config. Anything still left to ask (a project's config) is refused by Cotal's
//   plugin in a managed seat, and by `opencode run` itself in a run.
// - An allow-list (`allowedTools`, Claude's rule names) becomes `"*": "deny"` and one allow rule
//   each; Cotal's own MCP tools are always allowed.
// - The deny floor (runtime/deny-floor.ts) comes last of all, as `bash` deny rules: no rule of the
//   user's or the agent file's can lift it. Never `--auto` (OpenCode's "approve everything").
import { DENY_FLOOR_COMMANDS } from "../runtime/index.js";
import { opencodeLaunchError } from "./errors.js";

/** The agent Cotal's launches run as. */
export const COTAL_AGENT = "cotal";
/** Cotal's MCP server's name in the config: its tools reach the model as `cotal_<tool>`. */
export const MCP_NAME = "cotal";
/** OpenCode's built-in subagents: the only ones a Cotal launch may call, and they get Cotal's rules too. */
export const SUBAGENTS = ["general", "explore"] as const;
/** The posture's name, as `ps` shows it. */
export const POSTURE_NAME = "agent cotal: asks refused, deny floor";

/** One rule: a permission (tool), its action, for every pattern or for some. */
export type PermissionRules = Record<string, string | Record<string, string>>;

/** Claude's tool names (allowedTools rules) → OpenCode's permission names. */
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

/** One Claude allow rule → the OpenCode permission and pattern it allows; refused when OpenCode has no such tool. */
export function allowRuleOf(rule: string): { permission: string; pattern?: string } {
  const mcp = /^mcp__([A-Za-z0-9_-]+?)(?:__(\*|[A-Za-z0-9_-]+))?$/.exec(rule);
  if (mcp) return { permission: `${mcp[1]}_${mcp[2] ?? "*"}` };
  const m = /^([A-Za-z]+)(?:\((.+)\))?$/.exec(rule.trim());
  const permission = m ? TOOLS[m[1]!] : undefined;
  if (!m || !permission)
    throw opencodeLaunchError(`The allowedTools rule ${JSON.stringify(rule)} names no tool OpenCode has.`, {
      remedy: `For runtime opencode, allowedTools may name ${Object.keys(TOOLS).join(", ")} (with a pattern in parentheses) and mcp__<server>[__<tool>].`,
    });
  const pattern = m[2]?.replace(/:\*$/, " *");
  return pattern === undefined ? { permission } : { permission, pattern };
}

/**
 * The `cotal` agent's permission rules for an allow-list (empty: OpenCode's and the user's own
 * rules decide), with the user's own asking rules (`userAsks`) turned into denials.
 */
export function postureRules(allowedTools: readonly string[], userAsks: ReadonlyArray<{ permission: string; pattern?: string }> = []): PermissionRules {
  const rules: PermissionRules = {};
  if (allowedTools.length) rules["*"] = "deny";
  // What the user's config would ask a person is refused (nobody is there); the agent file's allow-list may still allow it.
  for (const a of userAsks) put(rules, a.permission, "deny", a.pattern);
  if (allowedTools.length) {
    for (const r of allowedTools) {
      const { permission, pattern } = allowRuleOf(r);
      put(rules, permission, "allow", pattern);
    }
  }
  put(rules, `${MCP_NAME}_*`, "allow");
  // OpenCode's own defaults ask for these; unattended, they are refused.
  for (const p of ["doom_loop", "question", "plan_enter", "plan_exit"]) put(rules, p, "deny");
  put(rules, "external_directory", "deny", "*");
  // A subagent runs with its own agent's rules: only the built-in ones, which carry these rules too (launch.ts).
  const taskAllowed = !allowedTools.length || allowedTools.some((r) => /^Task(\(|$)/.test(r));
  put(rules, "task", "deny", "*");
  if (taskAllowed) for (const a of SUBAGENTS) put(rules, "task", "allow", a);
  for (const env of ["*.env", "*.env.*"]) put(rules, "read", "deny", env);
  for (const command of DENY_FLOOR_COMMANDS) put(rules, "bash", "deny", command);
  return rules;
}

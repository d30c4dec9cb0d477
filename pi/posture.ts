// The unattended posture of a pi seat or run (docs/runtimes.md). pi 0.73.1 has no permission
// system and never asks a person: every tool runs. Cotal's extension (extension.ts) is where the
// posture lives, in its `tool_call` handler, which blocks a call before it runs:
//
// - The deny floor (runtime/deny-floor.ts) first: a `bash` command it matches is blocked, with
//   the pattern named, whatever the allow-list says.
// - An allow-list (`allowedTools`, Claude's rule names) becomes the only tools that run (a
//   `Bash(prefix:*)` rule: only commands starting so); Cotal's own tools always run.
// - Without one, every tool runs (pi's own behaviour): nothing waits on a person either way.
//
// The posture reaches the extension as JSON in COTAL_PI_POSTURE. Pure and node-free: it is
// bundled into the extension.
import { floorRuleFor } from "../runtime/index.js";

/** The posture's name, as `ps` shows it. */
export const POSTURE_NAME = "extension: no asks, deny floor";
/** The variable the posture reaches the extension in. */
export const POSTURE_ENV = "COTAL_PI_POSTURE";
/** Cotal's tools, as the extension registers them (the connector's MCP tool names). */
export const COTAL_TOOL = /^cotal_/;

/** What may run: every tool (`tools` absent), or these tools, `bash` only with these command prefixes (`bash` absent: any command). */
export interface PiPosture {
  tools?: string[];
  bash?: string[];
}

/** Claude's tool names (allowedTools rules) → pi's built-in tools. */
const TOOLS: Readonly<Record<string, string>> = {
  Bash: "bash",
  Read: "read",
  Edit: "edit",
  MultiEdit: "edit",
  Write: "write",
  Grep: "grep",
  Glob: "find",
  LS: "ls",
};

/** Thrown for an allow rule pi has no tool for (the adapter wraps it in its launch error). */
export class PostureRuleError extends Error {}

/** An allow-list as pi's posture (empty: everything runs). */
export function postureOf(allowedTools: readonly string[]): PiPosture {
  if (!allowedTools.length) return {};
  const tools = new Set<string>();
  const bash: string[] = [];
  let anyBash = false;
  for (const rule of allowedTools) {
    if (/^mcp__cotal(?:__(\*|[A-Za-z0-9_-]+))?$/.test(rule)) continue; // Cotal's own tools always run
    const m = /^([A-Za-z]+)(?:\((.+)\))?$/.exec(rule.trim());
    const tool = m ? TOOLS[m[1]!] : undefined;
    if (!m || !tool)
      throw new PostureRuleError(
        `The allowedTools rule ${JSON.stringify(rule)} names no tool pi has (pi has no MCP servers but Cotal's; its tools: ${Object.keys(TOOLS).join(", ")}).`,
      );
    tools.add(tool);
    const pattern = m[2];
    if (tool !== "bash" || pattern === undefined || pattern === "*") {
      if (tool === "bash") anyBash = true;
      continue;
    }
    const prefix = pattern.replace(/:\*$/, "").replace(/ \*$/, "");
    if (prefix.includes("*"))
      throw new PostureRuleError(`The allowedTools rule ${JSON.stringify(rule)} has a wildcard inside; write it as Bash(<command prefix>:*).`);
    bash.push(prefix);
  }
  return { tools: [...tools], ...(anyBash ? {} : { bash }) };
}

/** Why a tool call is blocked (a sentence the model can act on), or undefined when it may run. */
export function refusalOf(posture: PiPosture, toolName: string, input: unknown): string | undefined {
  const command = toolName === "bash" ? (input as { command?: unknown } | null)?.command : undefined;
  if (typeof command === "string") {
    const rule = floorRuleFor(command);
    if (rule !== undefined)
      return `Cotal's deny floor refuses this command (it matches \`${rule}\`): a destructive command an agent of the mesh does not run. Do it another way, or leave it to a person.`;
  }
  if (COTAL_TOOL.test(toolName) || posture.tools === undefined) return undefined;
  if (!posture.tools.includes(toolName)) return `The tool ${toolName} is not in this agent's allowedTools; it was not run.`;
  if (toolName === "bash" && posture.bash !== undefined && !(typeof command === "string" && posture.bash.some((p) => command.trim().startsWith(p))))
    return `This command is not one this agent's allowedTools lets run (allowed: ${posture.bash.map((p) => `${p}…`).join(", ") || "none"}); it was not run.`;
  return undefined;
}

/** The posture from the extension's environment (absent or unreadable: everything runs, the floor still holds). */
export function postureFromEnv(value: string | undefined): PiPosture {
  if (!value) return {};
  try {
    const p = JSON.parse(value) as PiPosture;
    return {
      ...(Array.isArray(p.tools) ? { tools: p.tools.filter((t) => typeof t === "string") } : {}),
      ...(Array.isArray(p.bash) ? { bash: p.bash.filter((t) => typeof t === "string") } : {}),
    };
  } catch {
    return { tools: [] }; // a posture that cannot be read runs nothing but Cotal's tools
  }
}

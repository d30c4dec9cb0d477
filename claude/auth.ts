// How Claude seats and runs authenticate (docs/claude-binding.md, Auth). Claude Code picks its
// credentials from its environment in a fixed order; a manager chooses one mode (named, or what
// the shell that started it selects, in Claude's own order), hands a seat only that mode's
// switch and secret, and checks before a spawn that the mode's credentials are there.
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { z } from "zod";
import { RESTART_MANAGER } from "../runtime/index.js";
import type { AuthDetail } from "../runtime/index.js";
import { claudeConfigDir } from "./transcripts.js";

/** Claude Code's own ways to authenticate, in its order of precedence (`--claude-auth`). */
export const ClaudeAuthMode = z.enum(["bedrock", "vertex", "foundry", "auth-token", "api-key", "oauth-token", "subscription"]);
export type ClaudeAuthMode = z.infer<typeof ClaudeAuthMode>;

/** What a manager says of its Claude auth: never a secret, only names and where the login or endpoint is. */
export interface ClaudeAuthStatus extends AuthDetail {
  mode: ClaudeAuthMode;
  /** The mode's credentials are present (a pre-flight: not a call to the model). */
  ready: boolean;
  problem?: string;
  remedy?: string;
}

/** `--claude-auth`: a mode, or `auto` (what the environment selects). */
export const ClaudeAuthChoice = z.union([z.literal("auto"), ClaudeAuthMode], {
  error: () => `must be auto or one of ${ClaudeAuthMode.options.join(", ")}`,
});
export type ClaudeAuthChoice = z.infer<typeof ClaudeAuthChoice>;

type Env = Readonly<Record<string, string | undefined>>;

/** The variable that switches a mode on, or carries its secret. A seat gets its own mode's only. */
export const MODE_SWITCH: Readonly<Record<Exclude<ClaudeAuthMode, "subscription">, string>> = {
  bedrock: "CLAUDE_CODE_USE_BEDROCK",
  vertex: "CLAUDE_CODE_USE_VERTEX",
  foundry: "CLAUDE_CODE_USE_FOUNDRY",
  "auth-token": "ANTHROPIC_AUTH_TOKEN",
  "api-key": "ANTHROPIC_API_KEY",
  "oauth-token": "CLAUDE_CODE_OAUTH_TOKEN",
};

/** What else each mode reads (names shown by status when set; the first group of each is required). */
const MODE_VARS: Readonly<Record<ClaudeAuthMode, { required: readonly (readonly string[])[]; optional: readonly string[] }>> = {
  // Claude Code reads the region from the environment only (not from ~/.aws/config); the
  // credentials come from the AWS SDK chain, which may be a profile, a file or instance metadata.
  bedrock: {
    required: [["AWS_REGION"]],
    optional: ["AWS_PROFILE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_BEARER_TOKEN_BEDROCK", "ANTHROPIC_BEDROCK_BASE_URL"],
  },
  vertex: {
    required: [["CLOUD_ML_REGION"], ["ANTHROPIC_VERTEX_PROJECT_ID"]],
    optional: ["GOOGLE_APPLICATION_CREDENTIALS", "ANTHROPIC_VERTEX_BASE_URL"],
  },
  foundry: { required: [["ANTHROPIC_FOUNDRY_RESOURCE", "ANTHROPIC_FOUNDRY_BASE_URL"]], optional: ["ANTHROPIC_FOUNDRY_API_KEY"] },
  "auth-token": { required: [], optional: ["ANTHROPIC_BASE_URL"] },
  "api-key": { required: [], optional: ["ANTHROPIC_BASE_URL"] },
  "oauth-token": { required: [], optional: [] },
  subscription: { required: [], optional: ["CLAUDE_CONFIG_DIR"] },
};

/** How Claude Code reads a switch: 1, true, yes or on. */
function truthy(v: string | undefined): boolean {
  return ["1", "true", "yes", "on"].includes((v ?? "").trim().toLowerCase());
}

function set(env: Env, name: string): boolean {
  return (env[name] ?? "") !== "";
}

/**
 * The mode `claude` started with `env` would use, in Claude Code's order: a cloud provider switch,
 * then ANTHROPIC_AUTH_TOKEN, ANTHROPIC_API_KEY, CLAUDE_CODE_OAUTH_TOKEN, else the login.
 */
export function detectClaudeAuth(env: Env): ClaudeAuthMode {
  for (const mode of ["bedrock", "vertex", "foundry"] as const) if (truthy(env[MODE_SWITCH[mode]])) return mode;
  for (const mode of ["auth-token", "api-key", "oauth-token"] as const) if (set(env, MODE_SWITCH[mode])) return mode;
  return "subscription";
}

/** The mode a choice names (`auto`: detected from `env`). */
export function resolveClaudeAuth(choice: ClaudeAuthChoice, env: Env): ClaudeAuthMode {
  return choice === "auto" ? detectClaudeAuth(env) : choice;
}

/** Where a subscription seat's login comes from: `.credentials.json` of the user's Claude config dir. */
export function loginFile(env: Env): string {
  return path.join(claudeConfigDir(env), ".credentials.json");
}

/** A login file that exists and holds JSON (Claude refreshes an expired token itself; its content is not read further). */
function loginPresent(file: string): boolean {
  try {
    JSON.parse(readFileSync(file, "utf8"));
    return true;
  } catch {
    return false;
  }
}

/** ANTHROPIC_BASE_URL's origin, without user or password; unset or unparsable: undefined. */
function baseUrlOrigin(env: Env): string | undefined {
  const raw = env.ANTHROPIC_BASE_URL;
  if (!raw) return undefined;
  try {
    return new URL(raw).origin;
  } catch {
    return "(not a URL)";
  }
}

/**
 * What a manager says of its Claude auth, and the pre-flight a spawn or run passes first: the
 * mode's credentials are present (variables set, or for a subscription the login file exists). It
 * cannot tell whether they are valid: a seat whose model calls fail shows condition `auth`.
 */
export function describeClaudeAuth(choice: ClaudeAuthChoice, env: Env): ClaudeAuthStatus {
  const mode = resolveClaudeAuth(choice, env);
  const spec = MODE_VARS[mode];
  const named = mode === "subscription" ? [] : [MODE_SWITCH[mode]];
  const vars = [...named, ...spec.required.flat(), ...spec.optional].filter((n) => set(env, n));
  const base = baseUrlOrigin(env);
  const out: ClaudeAuthStatus = {
    mode,
    chosen: choice === "auto" ? "auto" : "explicit",
    vars: [...new Set(vars)],
    ...(base && mode !== "subscription" ? { baseUrl: base } : {}),
    ready: true,
  };
  const missing = [...(mode === "subscription" ? [] : [[MODE_SWITCH[mode]]]), ...spec.required].filter((group) => !group.some((n) => set(env, n)));
  if (mode !== "subscription" && missing.length) {
    out.ready = false;
    out.problem = `Claude auth ${mode} needs ${missing.map((g) => g.join(" or ")).join(" and ")} in the manager's environment, and it is not set.`;
    out.remedy = `Set it in the shell, ${RESTART_MANAGER}; or choose another mode with --claude-auth.`;
  }
  if (mode === "subscription") {
    const file = loginFile(env);
    if (process.platform === "darwin") return { ...out, login: file }; // the login lives in the Keychain there: nothing to check cheaply
    // Named as the login only when it is one: a missing file is named by the problem instead.
    if (loginPresent(file)) out.login = file;
    else {
      out.ready = false;
      out.problem = `Claude auth subscription needs a Claude login, and ${file} ${existsSync(file) ? "is not a readable JSON file" : "does not exist"} (no API key or other credentials were in the manager's environment either).`;
      out.remedy = `Log in once with \`claude\` (/login) as this user, or export ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN, Bedrock or Vertex settings), ${RESTART_MANAGER}.`;
    }
  }
  return out;
}

/** Every variable that selects a mode or carries its secret: each mode drops the others'. */
export const MODE_SWITCHES: readonly string[] = Object.values(MODE_SWITCH);

// What the user's own GitHub Copilot CLI configuration is (docs/runtimes.md), read lightly: its
// home (`$COPILOT_HOME`, else `~/.copilot`) with config.json (settings, trusted folders, a stored
// login) and mcp-config.json (their MCP servers), and a bring-your-own-key provider named in the
// environment (`COPILOT_PROVIDER_*`, `COPILOT_MODEL`) or a GitHub token variable. Names and paths
// only, never a value: the CLI itself reads the files; a launch gets copies in its private home.
import { existsSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { readJsonObjectFile, type Env } from "../runtime/index.js";

/** The variables Copilot CLI 1.0.102 reads a bring-your-own-key provider and model from. */
export const PROVIDER_VARS = [
  "COPILOT_PROVIDER_TYPE",
  "COPILOT_PROVIDER_BASE_URL",
  "COPILOT_PROVIDER_API_KEY",
  "COPILOT_PROVIDER_BEARER_TOKEN",
  "COPILOT_PROVIDER_WIRE_API",
  "COPILOT_PROVIDER_AZURE_API_VERSION",
  "COPILOT_PROVIDER_MAX_PROMPT_TOKENS",
  "COPILOT_PROVIDER_MAX_OUTPUT_TOKENS",
  "COPILOT_MODEL",
  "COPILOT_OFFLINE",
] as const;
/** The variables it reads a GitHub login token from. */
export const TOKEN_VARS = ["COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN"] as const;

export interface UserCopilotConfig {
  /** The user's Copilot home. */
  dir: string;
  /** Its config.json, when there is one. */
  config?: string;
  /** Its mcp-config.json, when there is one. */
  mcp?: string;
  /** A stored login in config.json (`logged_in_users`), as a login name. */
  login?: string;
  /** Why a file could not be read as JSON, when one could not. */
  unreadable?: string;
}

/** The folder a hand-started `copilot` reads as its home: `$COPILOT_HOME`, else `~/.copilot`. */
export function userCopilotDir(env: Env): string {
  const named = env.COPILOT_HOME;
  if (named && path.isAbsolute(named)) return named;
  return path.join(env.HOME ?? os.homedir(), ".copilot");
}

export function readUserCopilotConfig(env: Env): UserCopilotConfig {
  const dir = userCopilotDir(env);
  const out: UserCopilotConfig = { dir };
  const mcp = path.join(dir, "mcp-config.json");
  if (existsSync(mcp)) {
    out.mcp = mcp;
    const m = readJsonObjectFile(mcp);
    if ("error" in m) out.unreadable = m.error;
  }
  const config = path.join(dir, "config.json");
  if (existsSync(config)) {
    out.config = config;
    const c = readJsonObjectFile(config);
    if ("error" in c) out.unreadable ??= c.error;
    else {
      const users = c.doc.logged_in_users ?? c.doc.loggedInUsers;
      const first = Array.isArray(users) ? (users[0] as { login?: unknown } | undefined) : undefined;
      if (typeof first?.login === "string") out.login = first.login;
    }
  }
  return out;
}

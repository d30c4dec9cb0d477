// What the user's own Gemini CLI configuration is (docs/runtimes.md), read lightly: its home
// (`$GEMINI_CLI_HOME/.gemini`, else `~/.gemini`), the auth type and model its settings.json
// selects, its global context file (GEMINI.md) and its Google login (oauth_creds.json). Names and
// paths only, never a value: the CLI itself reads the files.
import { existsSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { RESTART_MANAGER, type Env } from "../runtime/index.js";

/** The variables Gemini CLI 0.61.0 reads its credentials and endpoints from. */
export const GEMINI_KEY_VARS = [
  "GEMINI_API_KEY",
  "GOOGLE_API_KEY",
  "GOOGLE_GEMINI_BASE_URL",
  "GOOGLE_VERTEX_BASE_URL",
  "GOOGLE_CLOUD_PROJECT",
  "GOOGLE_CLOUD_LOCATION",
  "GOOGLE_GENAI_USE_VERTEXAI",
  "GOOGLE_GENAI_USE_GCA",
  "GOOGLE_APPLICATION_CREDENTIALS",
  "GEMINI_MODEL",
] as const;

/** The auth types of `security.auth.selectedType` (0.61.0). */
export const AUTH_TYPES = ["gemini-api-key", "vertex-ai", "oauth-personal", "compute-default-credentials"] as const;

export interface UserGeminiConfig {
  /** The user's Gemini folder (`~/.gemini`). */
  dir: string;
  /** Its settings.json, when there is one. */
  settings?: string;
  /** `security.auth.selectedType` (or the older top-level `selectedAuthType`). */
  authType?: string;
  /** Its `model` block (e.g. `{ "name": "gemini-2.5-pro" }`), carried as it is. */
  model?: Record<string, unknown>;
  /** Its global context file (GEMINI.md), when there is one. */
  context?: string;
  /** Its Google login (`gemini` → Login with Google), when there is one. */
  login?: string;
  /** Why settings.json could not be read (not JSON), when it could not. */
  unreadable?: string;
}

/** The folder a hand-started `gemini` reads as its home: `$GEMINI_CLI_HOME/.gemini`, else `~/.gemini`. */
export function userGeminiDir(env: Env): string {
  const home = env.GEMINI_CLI_HOME && path.isAbsolute(env.GEMINI_CLI_HOME) ? env.GEMINI_CLI_HOME : (env.HOME ?? os.homedir());
  return path.join(home, ".gemini");
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);

/** settings.json as an object, or why not. Gemini tolerates comments; Cotal reads plain JSON only. */
export function parseSettings(text: string): { doc: Record<string, unknown> } | { error: string } {
  if (text.trim() === "") return { doc: {} };
  try {
    const doc: unknown = JSON.parse(text);
    return isObject(doc) ? { doc } : { error: "not a JSON object" };
  } catch (err) {
    return { error: (err as Error).message };
  }
}

export function readUserGeminiConfig(env: Env): UserGeminiConfig {
  const dir = userGeminiDir(env);
  const out: UserGeminiConfig = { dir };
  const context = path.join(dir, "GEMINI.md");
  if (existsSync(context)) out.context = context;
  const login = path.join(dir, "oauth_creds.json");
  if (existsSync(login)) out.login = login;
  const settings = path.join(dir, "settings.json");
  if (!existsSync(settings)) return out;
  out.settings = settings;
  const parsed = parseSettings(readFileSync(settings, "utf8"));
  if ("error" in parsed) return { ...out, unreadable: parsed.error };
  const auth = (parsed.doc.security as { auth?: { selectedType?: unknown } } | undefined)?.auth?.selectedType ?? parsed.doc.selectedAuthType;
  if (typeof auth === "string") out.authType = auth;
  if (isObject(parsed.doc.model)) out.model = parsed.doc.model;
  return out;
}

/** The auth type a launch selects: the user's, else the one their environment implies (as the CLI infers it). */
export function effectiveAuthType(user: UserGeminiConfig, env: Env): string | undefined {
  if (user.authType) return user.authType;
  if (env.GOOGLE_GENAI_USE_GCA === "true") return "oauth-personal";
  if (env.GOOGLE_GENAI_USE_VERTEXAI === "true") return "vertex-ai";
  if (env.GEMINI_API_KEY) return "gemini-api-key";
  return undefined;
}

/** Whether the credentials an auth type needs are there (names only); the problem and its remedy when not. */
export function authProblem(type: string | undefined, user: UserGeminiConfig, env: Env): { problem: string; remedy: string } | undefined {
  if (type === undefined)
    return {
      problem: `Gemini CLI has no auth method here (no security.auth.selectedType in ${path.join(user.dir, "settings.json")}, no GEMINI_API_KEY).`,
      remedy: `Export GEMINI_API_KEY where the manager runs (or choose an auth method once in \`gemini\` → /auth), ${RESTART_MANAGER}.`,
    };
  if (type === "gemini-api-key" && !env.GEMINI_API_KEY)
    return {
      problem: "Gemini CLI's auth is gemini-api-key, but GEMINI_API_KEY is not set.",
      remedy: "Export GEMINI_API_KEY where the manager runs, then restart it.",
    };
  if (type === "vertex-ai" && !env.GOOGLE_API_KEY && !(env.GOOGLE_CLOUD_PROJECT && env.GOOGLE_CLOUD_LOCATION))
    return {
      problem: "Gemini CLI's auth is vertex-ai, but neither GOOGLE_API_KEY nor GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION are set.",
      remedy: "Export GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION (or GOOGLE_API_KEY) where the manager runs, then restart it.",
    };
  if (type === "oauth-personal" && !user.login)
    return {
      problem: `Gemini CLI's auth is oauth-personal, but there is no login (${path.join(user.dir, "oauth_creds.json")}).`,
      remedy: `Log in once with \`gemini\` (Login with Google) as this user, ${RESTART_MANAGER}.`,
    };
  if (!(AUTH_TYPES as readonly string[]).includes(type))
    return {
      problem: `Gemini CLI's auth type ${JSON.stringify(type)} is not one Cotal knows how to carry into a seat.`,
      remedy: `Select one of ${AUTH_TYPES.join(", ")} in ${path.join(user.dir, "settings.json")} (security.auth.selectedType).`,
    };
  return undefined;
}

// What the user's own pi configuration is (docs/runtimes.md), read lightly: its agent folder
// (`$PI_CODING_AGENT_DIR`, else `~/.pi/agent`), the models.json that names custom providers and
// the variables their keys come from, the settings.json that picks the default provider and model,
// the login store (auth.json) and an APPEND_SYSTEM.md. Names and paths only, never a value: pi
// itself reads the files; a launch gets copies in its private folder, the user's stay untouched.
import { existsSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { readJsonObjectFile, type Env } from "../runtime/index.js";

/** The variables pi 0.73.1 reads its built-in providers' keys from (docs/providers.md), the common ones. */
export const PI_KEY_VARS = [
  "ANTHROPIC_API_KEY",
  "ANTHROPIC_OAUTH_TOKEN",
  "AZURE_OPENAI_API_KEY",
  "OPENAI_API_KEY",
  "DEEPSEEK_API_KEY",
  "GEMINI_API_KEY",
  "MISTRAL_API_KEY",
  "GROQ_API_KEY",
  "CEREBRAS_API_KEY",
  "XAI_API_KEY",
  "OPENROUTER_API_KEY",
  "AI_GATEWAY_API_KEY",
  "ZAI_API_KEY",
  "OPENCODE_API_KEY",
  "HF_TOKEN",
  "FIREWORKS_API_KEY",
  "KIMI_API_KEY",
  "MINIMAX_API_KEY",
] as const;

/** pi's own switches a user may have set for every launch. */
export const PI_SWITCHES = ["PI_OFFLINE", "PI_CACHE_RETENTION", "PI_SKIP_VERSION_CHECK"] as const;

export interface UserPiConfig {
  /** The user's agent folder. */
  dir: string;
  /** Its models.json (custom providers), when there is one. */
  models?: string;
  /** Its settings.json, when there is one. */
  settings?: string;
  /** Its login store (auth.json, `/login`), when there is one. */
  login?: string;
  /** Its APPEND_SYSTEM.md, when there is one. */
  appendSystem?: string;
  /** Its extensions folder, when there is one (pi discovers extensions there). */
  extensions?: string;
  /** settings.json's `defaultProvider` / `defaultModel`. */
  provider?: string;
  model?: string;
  /** Variables models.json names as a provider's key (an `apiKey` that is a variable's name): they pass into a launch. */
  envKeys: string[];
  /** Why a file could not be read as JSON, when one could not. */
  unreadable?: string;
}

/** The folder a hand-started `pi` reads: `$PI_CODING_AGENT_DIR`, else `~/.pi/agent`. */
export function userPiDir(env: Env): string {
  const named = env.PI_CODING_AGENT_DIR;
  if (named && path.isAbsolute(named)) return named;
  return path.join(env.HOME ?? os.homedir(), ".pi", "agent");
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);

/** An `apiKey` that names a variable (pi reads it from the environment) rather than holding a key or a command. */
const VARIABLE = /^[A-Z_][A-Z0-9_]*$/;

export function readUserPiConfig(env: Env): UserPiConfig {
  const dir = userPiDir(env);
  const out: UserPiConfig = { dir, envKeys: [] };
  const at = (f: string): string | undefined => (existsSync(path.join(dir, f)) ? path.join(dir, f) : undefined);
  const login = at("auth.json");
  if (login) out.login = login;
  const append = at("APPEND_SYSTEM.md");
  if (append) out.appendSystem = append;
  const extensions = at("extensions");
  if (extensions) out.extensions = extensions;
  const models = at("models.json");
  if (models) {
    out.models = models;
    const m = readJsonObjectFile(models);
    if ("error" in m) out.unreadable = m.error;
    else if (isObject(m.doc.providers))
      out.envKeys = [
        ...new Set(Object.values(m.doc.providers).flatMap((p) => (isObject(p) && typeof p.apiKey === "string" && VARIABLE.test(p.apiKey) ? [p.apiKey] : []))),
      ];
  }
  const settings = at("settings.json");
  if (settings) {
    out.settings = settings;
    const s = readJsonObjectFile(settings);
    if ("error" in s) out.unreadable ??= s.error;
    else {
      if (typeof s.doc.defaultProvider === "string") out.provider = s.doc.defaultProvider;
      if (typeof s.doc.defaultModel === "string") out.model = s.doc.defaultModel;
    }
  }
  return out;
}

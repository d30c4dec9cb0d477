// What the user's own OpenCode configuration is (docs/runtimes.md), read lightly: the config file
// OpenCode reads first (`$OPENCODE_CONFIG`, else `$XDG_CONFIG_HOME/opencode/opencode.json[c]`, else
// `~/.config/opencode/…`), the model and providers it names, the environment variables it reads
// (`{env:NAME}`), and the login file (`$XDG_DATA_HOME/opencode/auth.json`). Names and paths only,
// never a value: OpenCode itself parses and uses the files.
import { existsSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Env } from "../runtime/index.js";

/** Provider key variables OpenCode 1.18.33 reads from the environment for its built-in providers (the common ones). */
export const PROVIDER_KEY_VARS = [
  "ANTHROPIC_API_KEY",
  "OPENAI_API_KEY",
  "GOOGLE_GENERATIVE_AI_API_KEY",
  "GEMINI_API_KEY",
  "OPENROUTER_API_KEY",
  "GROQ_API_KEY",
  "MISTRAL_API_KEY",
  "DEEPSEEK_API_KEY",
  "XAI_API_KEY",
  "OPENCODE_API_KEY",
] as const;

export interface UserOpencodeConfig {
  /** The user's config folder (`$XDG_CONFIG_HOME/opencode`). */
  dir: string;
  /** The config file OpenCode reads for this user, when there is one. */
  config?: string;
  /** Top-level `model` (`provider/model`). */
  model?: string;
  /** Variables its `{env:NAME}` substitutions read: they pass into a launch. */
  envKeys: string[];
  /** The login file (`opencode auth login`), when there is one. */
  login?: string;
  /** The rules of its `permission` block that ask a person (a plain-JSON file only): unattended, they are refused. */
  asks: Array<{ permission: string; pattern?: string }>;
}

/** The `ask` rules of a config's `permission` block (`{tool: "ask"}` or `{tool: {pattern: "ask"}}`), or none when it is not plain JSON. */
export function askRulesOf(text: string): Array<{ permission: string; pattern?: string }> {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    return [];
  }
  const permission = (doc as { permission?: unknown } | null)?.permission;
  if (typeof permission === "string") return permission === "ask" ? [{ permission: "*" }] : [];
  if (!permission || typeof permission !== "object") return [];
  return Object.entries(permission as Record<string, unknown>).flatMap(([tool, rule]) =>
    rule === "ask"
      ? [{ permission: tool }]
      : rule && typeof rule === "object"
        ? Object.entries(rule as Record<string, unknown>).flatMap(([pattern, action]) => (action === "ask" ? [{ permission: tool, pattern }] : []))
        : [],
  );
}

const home = (env: Env): string => env.HOME ?? os.homedir();

/** The user's OpenCode config folder. */
export function userConfigDir(env: Env): string {
  return path.join(env.XDG_CONFIG_HOME && path.isAbsolute(env.XDG_CONFIG_HOME) ? env.XDG_CONFIG_HOME : path.join(home(env), ".config"), "opencode");
}

/** The user's OpenCode data folder (sessions, auth.json). */
export function userDataDir(env: Env): string {
  return path.join(env.XDG_DATA_HOME && path.isAbsolute(env.XDG_DATA_HOME) ? env.XDG_DATA_HOME : path.join(home(env), ".local", "share"), "opencode");
}

/** The config file a hand-started `opencode` reads first: `$OPENCODE_CONFIG`, else opencode.json, else opencode.jsonc in the config folder. */
export function userConfigFile(env: Env): string | undefined {
  if (env.OPENCODE_CONFIG && path.isAbsolute(env.OPENCODE_CONFIG) && existsSync(env.OPENCODE_CONFIG)) return env.OPENCODE_CONFIG;
  const dir = userConfigDir(env);
  return ["opencode.json", "opencode.jsonc"].map((f) => path.join(dir, f)).find((f) => existsSync(f));
}

export function readUserOpencodeConfig(env: Env): UserOpencodeConfig {
  const dir = userConfigDir(env);
  const out: UserOpencodeConfig = { dir, envKeys: [], asks: [] };
  const login = path.join(userDataDir(env), "auth.json");
  if (existsSync(login)) out.login = login;
  const config = userConfigFile(env);
  if (!config) return out;
  out.config = config;
  const text = readFileSync(config, "utf8");
  const model = /"model"\s*:\s*"([^"\n]+\/[^"\n]+)"/.exec(text)?.[1];
  if (model) out.model = model;
  out.asks = askRulesOf(text);
  out.envKeys = [...new Set([...text.matchAll(/\{env:([A-Za-z_][A-Za-z0-9_]*)\}/g)].map((m) => m[1]!))];
  return out;
}

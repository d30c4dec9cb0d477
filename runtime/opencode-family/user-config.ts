// What the user's own configuration of an OpenCode-family CLI is (docs/runtimes.md), read lightly:
// the config files it reads (`$<CONFIG>`, and its global folder `$XDG_CONFIG_HOME/<app>`, else
// `~/.config/<app>`), the model and providers they name, the environment variables they read
// (`{env:NAME}`), and the login file (`$XDG_DATA_HOME/<app>/auth.json`). Names and paths only,
// never a value: the CLI itself parses and uses the files.
import { existsSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Env } from "../adapter.js";
import type { OpencodeFamily } from "./family.js";

/** A rule of a config's `permission` block that asks a person. */
export interface AskRule {
  permission: string;
  pattern?: string;
}

export interface UserOpencodeConfig {
  /** The user's global config folder (`$XDG_CONFIG_HOME/<app>`). */
  dir: string;
  /** The global folder's config files a launch carries, in the order the CLI reads them (named in place: at most one). */
  files: string[];
  /** The config file the user names in the CLI's own variable (`$<CONFIG>`), read after the global folder's. */
  named?: string;
  /** The last top-level-looking `model` (`provider/model`) the files name. */
  model?: string;
  /** Variables its `{env:NAME}` substitutions read: they pass into a launch. */
  envKeys: string[];
  /** The login file (`<cli> auth login`), when there is one. */
  login?: string;
  /** The rules of its `permission` blocks that ask a person (plain-JSON files only): unattended, they are refused. */
  asks: AskRule[];
}

/** The `ask` rules of a config's `permission` block (`{tool: "ask"}` or `{tool: {pattern: "ask"}}`), or none when it is not plain JSON. */
export function askRulesOf(text: string): AskRule[] {
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
const xdg = (env: Env, name: "XDG_CONFIG_HOME" | "XDG_DATA_HOME", fallback: string[]): string => {
  const set = env[name];
  return set && path.isAbsolute(set) ? set : path.join(home(env), ...fallback);
};

/** The user's global config folder of `d`. */
export const userConfigDir = (d: OpencodeFamily, env: Env): string => path.join(xdg(env, "XDG_CONFIG_HOME", [".config"]), d.app);

/** The user's data folder of `d` (sessions, auth.json). */
export const userDataDir = (d: OpencodeFamily, env: Env): string => path.join(xdg(env, "XDG_DATA_HOME", [".local", "share"]), d.app);

/** The config file `d` edits itself in `dir` (`cotal setup` writes there): the first of its edited files that exists, else the first plain `.json`. */
export function editedFileIn(d: OpencodeFamily, dir: string): string {
  const name = d.editedFiles.find((f) => existsSync(path.join(dir, f))) ?? d.editedFiles.find((f) => f.endsWith(".json")) ?? d.editedFiles[0]!;
  return path.join(dir, name);
}

/**
 * The user's config files a launch carries. Named in place (`in-place`): the one a hand-started CLI
 * reads first (`$<CONFIG>`, else the first global file). Copied: every global file, in the order
 * the CLI merges them, and `$<CONFIG>` after them, as a hand-started CLI reads them all.
 */
function configFilesOf(d: OpencodeFamily, env: Env, dir: string): { files: string[]; named?: string } {
  const own = env[d.env.config];
  const named = own && path.isAbsolute(own) && existsSync(own) ? own : undefined;
  const global = d.configFiles.map((f) => path.join(dir, f)).filter((f) => existsSync(f));
  if (d.userConfig === "copied") return { files: global, ...(named ? { named } : {}) };
  return named ? { files: [], named } : { files: global.slice(0, 1) };
}

export function readUserOpencodeConfig(d: OpencodeFamily, env: Env): UserOpencodeConfig {
  const dir = userConfigDir(d, env);
  const { files, named } = configFilesOf(d, env, dir);
  const out: UserOpencodeConfig = { dir, files, envKeys: [], asks: [] };
  if (named) out.named = named;
  const login = path.join(userDataDir(d, env), "auth.json");
  if (existsSync(login)) out.login = login;
  const envKeys = new Set<string>();
  for (const file of [...files, ...(named ? [named] : [])]) {
    const text = readFileSync(file, "utf8");
    const model = /"model"\s*:\s*"([^"\n]+\/[^"\n]+)"/.exec(text)?.[1];
    if (model) out.model = model;
    out.asks.push(...askRulesOf(text));
    for (const m of text.matchAll(/\{env:([A-Za-z_][A-Za-z0-9_]*)\}/g)) envKeys.add(m[1]!);
  }
  out.envKeys = [...envKeys];
  return out;
}

/** Every config file of the user's a launch reads, in order (for summaries). */
export const userConfigFiles = (u: UserOpencodeConfig): string[] => [...u.files, ...(u.named ? [u.named] : [])];

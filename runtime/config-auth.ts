// What a runtime that reads its user's own configuration says of it (names and paths, never a
// value), and the refusal every such runtime makes alike: its config reads key variables that are
// not set in the manager's environment.
import type { Env, RuntimeAuth } from "./adapter.js";
import { RESTART_MANAGER } from "./restart-hint.js";

/** The key variables among `names` that are set, once each (an empty variable is no key). */
export function keysSet(names: readonly string[], env: Env): string[] {
  return [...new Set(names)].filter((k) => !!env[k]);
}

/** A runtime's configuration summary: its own parts (config file, model…), then its login and the key variables set. */
export function configSummary(parts: ReadonlyArray<string | undefined>, login: string | undefined, keys: readonly string[]): string {
  return [...parts, login ? `login ${login}` : undefined, keys.length ? `keys from ${keys.join(", ")}` : undefined].filter(Boolean).join("; ");
}

/** Not ready when the user's config reads key variables the environment does not set (`problem` says where it reads them), else undefined. */
export function unsetKeyVars(envKeys: readonly string[], env: Env, summary: string, problem: (missing: string) => string): RuntimeAuth | undefined {
  const missing = envKeys.filter((k) => !env[k]);
  if (!missing.length) return undefined;
  return { ready: false, summary, problem: problem(missing.join(", ")), remedy: `Export ${missing.join(", ")} where the manager runs, ${RESTART_MANAGER}.` };
}

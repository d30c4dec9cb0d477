// The environment a Codex launch gets: an allow-list of the launcher's (like Claude's,
// claude/env-allowlist.ts), its private CODEX_HOME, and the variables the user's providers read
// their keys from (`env_key` in their config.toml). Everything else — Cotal's own launch
// variables, another agent's session markers, unrelated secrets — stays out.
import type { Env } from "../runtime/index.js";

/** Names passed as they are. */
const BASE = ["PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "TERM", "TMPDIR", "TZ", "SSL_CERT_FILE", "SSL_CERT_DIR"] as const;
/** Prefixes passed as they are (locale; proxies are read by Codex's HTTP client). */
const PREFIXES = ["LC_"] as const;
const PROXIES = ["HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY", "https_proxy", "http_proxy", "no_proxy", "ALL_PROXY"] as const;
/** Codex's own credentials (documented): an API key for the OpenAI provider. */
const CREDENTIALS = ["OPENAI_API_KEY", "CODEX_API_KEY", "OPENAI_ORGANIZATION", "OPENAI_PROJECT"] as const;

export interface CodexEnvInput {
  parentEnv: Env;
  /** The private Codex home. */
  codexHome: string;
  /** The user's providers' key variables. */
  envKeys: readonly string[];
  /** Set on top (the seat's launch material). */
  set?: Readonly<Record<string, string>>;
}

export function buildCodexEnv(input: CodexEnvInput): Record<string, string> {
  const out: Record<string, string> = {};
  const names = new Set<string>([...BASE, ...PROXIES, ...CREDENTIALS, ...input.envKeys]);
  for (const [k, v] of Object.entries(input.parentEnv)) {
    if (v === undefined) continue;
    if (names.has(k) || PREFIXES.some((p) => k.startsWith(p))) out[k] = v;
  }
  return { ...out, ...input.set, CODEX_HOME: input.codexHome };
}

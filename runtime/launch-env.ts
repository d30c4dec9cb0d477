// The part of a launch's environment every runtime passes from the launcher as it is: the
// process basics, locale, TLS trust and proxies. Each adapter adds its own CLI's variables; all
// else (Cotal's own launch variables, another agent's session markers, unrelated secrets) stays out.
import type { Env } from "./adapter.js";

/** Names every launch passes as they are. */
export const BASE_ENV_NAMES = [
  "PATH",
  "HOME",
  "USER",
  "LOGNAME",
  "SHELL",
  "LANG",
  "TERM",
  "TMPDIR",
  "TZ",
  "SSL_CERT_FILE",
  "SSL_CERT_DIR",
  "NODE_EXTRA_CA_CERTS",
  "HTTPS_PROXY",
  "HTTP_PROXY",
  "NO_PROXY",
  "https_proxy",
  "http_proxy",
  "no_proxy",
  "ALL_PROXY",
] as const;

/** The launcher's variables named in `BASE_ENV_NAMES` or `names`, and the locale's `LC_*`. */
export function allowListedEnv(parentEnv: Env, names: readonly string[]): Record<string, string> {
  const allowed = new Set<string>([...BASE_ENV_NAMES, ...names]);
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(parentEnv)) if (v !== undefined && (allowed.has(k) || k.startsWith("LC_"))) out[k] = v;
  return out;
}

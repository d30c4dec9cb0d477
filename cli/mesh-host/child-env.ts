/**
 * The environment of the processes `cotal up` starts (nats-server, the mesh service): an
 * allow-list, never the caller's whole environment. A shell's cloud keys, tokens and its own
 * COTAL_CREDS / COTAL_SERVER stay out of long-lived background processes (and out of
 * /proc/<pid>/environ); everything they need comes on their command line as paths.
 */
const ALLOWED = new Set([
  "PATH",
  "HOME",
  "TMPDIR",
  "TZ",
  "LANG",
  "LANGUAGE",
  /** Where nats-server is, when it is not on PATH (read by the finder, also in children). */
  "NATS_SERVER_BIN",
  /** Logging of the mesh service (pino level and format). */
  "COTAL_LOG_LEVEL",
  "COTAL_LOG_FORMAT",
  /** A smaller bound of their log files (cli/mesh-host/bounded-log.ts; tests). */
  "COTAL_LOG_MAX_BYTES",
  /** The run budget caps of the manager `cotal up` starts (docs/runs.md). */
  "COTAL_DAILY_BUDGET_USD",
  "COTAL_TASK_BUDGET_USD",
  /** How long the manager's seats' permission asks wait for a person (docs/security.md, The approve right). */
  "COTAL_APPROVAL_TIMEOUT_MS",
  /** The user's Claude config dir: where the manager finds a session to carry on this host, and the login a subscription seat copies. */
  "CLAUDE_CONFIG_DIR",
]);

/** Whether a variable of the caller's environment is passed on to a background process. */
export function passesToChild(name: string): boolean {
  return ALLOWED.has(name) || name.startsWith("LC_");
}

/** The allow-listed part of `env`, with `extra` set on top. */
export function childEnv(extra: Record<string, string> = {}, env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined && passesToChild(k)) out[k] = v;
  return { ...out, ...extra };
}

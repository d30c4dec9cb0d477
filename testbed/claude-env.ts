// The minimal, offline environment for a real `claude` CLI talking to the model double; shared
// by the tests' Claude runner (test/harness/claude-runner.ts) and the wake bench.
import path from "node:path";

/** A dummy key: the double accepts anything, the CLI only needs one to be set. */
export const DUMMY_API_KEY = "sk-ant-api03-cotal-model-double-0000000000000000";

/** Switches that keep the CLI quiet and offline (no updater, telemetry, feature-flag or marketplace traffic). */
export const OFFLINE_ENV: Readonly<Record<string, string>> = {
  DISABLE_AUTOUPDATER: "1",
  DISABLE_UPDATES: "1",
  DISABLE_TELEMETRY: "1",
  DISABLE_ERROR_REPORTING: "1",
  DO_NOT_TRACK: "1",
  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
  DISABLE_GROWTHBOOK: "1",
  DISABLE_INSTALLATION_CHECKS: "1",
  DISABLE_COST_WARNINGS: "1",
  CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL: "1",
  CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY: "1",
};

/** The minimal environment a run gets: PATH (node first), HOME, LANG, TERM, the double, offline switches. */
export function claudeEnv(opts: {
  baseUrl: string;
  home: string;
  env?: Record<string, string>;
  /** Where PATH and LANG come from (default `process.env`); nothing else of it is passed on. */
  parentEnv?: NodeJS.ProcessEnv;
}): Record<string, string> {
  const parent = opts.parentEnv ?? process.env;
  const env: Record<string, string> = {
    PATH: [path.dirname(process.execPath), parent.PATH ?? "/usr/local/bin:/usr/bin:/bin"].join(path.delimiter),
    HOME: opts.home,
    LANG: parent.LANG ?? "C.UTF-8",
    TERM: "dumb",
    ANTHROPIC_BASE_URL: opts.baseUrl,
    ANTHROPIC_API_KEY: DUMMY_API_KEY,
    ...OFFLINE_ENV,
  };
  if (parent.TMPDIR) env.TMPDIR = parent.TMPDIR;
  // As root, --permission-mode bypassPermissions is refused unless the CLI believes it is sandboxed.
  if (process.getuid?.() === 0) env.IS_SANDBOX = "1";
  return { ...env, ...opts.env };
}

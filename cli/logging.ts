import { logger, type Logger } from "../broker/index.js";

/**
 * Logs go to stderr through pino (the broker's root logger); command output goes to stdout.
 * Short-lived commands log warnings and errors only unless COTAL_LOG_LEVEL says otherwise;
 * the long-running processes `cotal up` starts log at `info` into their log files.
 */
let userLevel: string | undefined;
let initialised = false;

export function initCliLogging(): void {
  if (initialised) return;
  initialised = true;
  userLevel = process.env.COTAL_LOG_LEVEL;
  process.env.COTAL_LOG_LEVEL = userLevel ?? "warn";
}

/** The level a background process (mesh service) should log at. */
export function serviceLogLevel(): string {
  return userLevel ?? "info";
}

/** Make this process log at the service level (the `mesh serve` command). */
export function useServiceLogLevel(): void {
  process.env.COTAL_LOG_LEVEL = serviceLogLevel();
}

/** A child logger of the CLI. */
export function cliLog(component: string, bindings: Record<string, unknown> = {}): Logger {
  return logger(`cli.${component}`, bindings);
}

import { logger, setLogDestination, type Logger } from "../broker/index.js";
import { oneLine } from "./output.js";

/**
 * Logs go to stderr through pino (the broker's root logger); command output goes to stdout.
 * Short-lived commands log warnings and errors only unless COTAL_LOG_LEVEL says otherwise;
 * the long-running processes `cotal up` starts log at `info` into their log files.
 *
 * For people, a log line is short plain text (`cotal: warning: …`); JSON lines come with
 * `--log-format json` (or COTAL_LOG_FORMAT=json), or when stderr is not a terminal and no format
 * was named. Stack traces appear only with `--debug`.
 */
let userLevel: string | undefined;
let initialised = false;

/** How the CLI writes its logs. */
export interface CliLogOptions {
  /** `text`, `json`, or undefined for: text on a terminal, JSON otherwise. */
  format?: string | undefined;
  /** Keep stack traces and log at debug level. */
  debug?: boolean | undefined;
}

export function initCliLogging(opts: CliLogOptions = {}): void {
  if (initialised) return;
  initialised = true;
  userLevel = process.env.COTAL_LOG_LEVEL;
  process.env.COTAL_LOG_LEVEL = opts.debug ? "debug" : (userLevel ?? "warn");
  const format = opts.format ?? process.env.COTAL_LOG_FORMAT ?? (process.stderr.isTTY ? "text" : "json");
  const once = onceAMinute();
  const write = (line: string) => void (once(line) && process.stderr.write(line));
  if (format === "text") setLogDestination({ write: (line: string) => write(humanLine(line, !!opts.debug)) });
  else if (!opts.debug) setLogDestination({ write: (line: string) => write(withoutStacks(line)) });
}

/**
 * A filter that lets the same complaint (component and message) through once a minute: a
 * heartbeat that fails every 2 s while the mesh is down is one line, not a line every 2 s.
 */
export function onceAMinute(now: () => number = Date.now): (json: string) => boolean {
  const last = new Map<string, number>();
  return (json) => {
    let key: string;
    try {
      const r = JSON.parse(json) as { component?: string; msg?: string };
      key = `${r.component ?? ""}|${r.msg ?? ""}`;
    } catch {
      return true;
    }
    const t = now();
    const before = last.get(key);
    if (before !== undefined && t - before < 60_000) return false;
    last.set(key, t);
    return true;
  };
}

const LEVELS: Record<number, string> = { 10: "trace", 20: "debug", 30: "info", 40: "warning", 50: "error", 60: "fatal" };

interface LogRecord {
  level?: number;
  msg?: string;
  err?: { message?: string; stack?: string };
}

/** One pino JSON line as a short line for a person: `cotal: error: <msg>: <err.message>`. */
export function humanLine(json: string, debug = false): string {
  let rec: LogRecord;
  try {
    rec = JSON.parse(json) as LogRecord;
  } catch {
    return json;
  }
  const level = LEVELS[rec.level ?? 30] ?? "info";
  const err = rec.err?.message ? `: ${rec.err.message}` : "";
  const stack = debug && rec.err?.stack ? `\n${rec.err.stack}` : "";
  return `cotal: ${level}: ${oneLine(rec.msg ?? "")}${oneLine(err)}${stack}\n`;
}

/** A pino JSON line without stack traces (they stay with --debug). */
export function withoutStacks(json: string): string {
  if (!json.includes('"stack"')) return json;
  try {
    return JSON.stringify(JSON.parse(json, (k, v: unknown) => (k === "stack" ? undefined : v))) + "\n";
  } catch {
    return json;
  }
}

/** The level a background process (mesh service) should log at. */
export function serviceLogLevel(): string {
  return userLevel ?? "info";
}

/** Make this process log at the service level, as JSON with its stacks (the `mesh serve` command, into its log file). */
export function useServiceLogLevel(): void {
  process.env.COTAL_LOG_LEVEL = serviceLogLevel();
  setLogDestination(undefined);
}

/** A child logger of the CLI. */
export function cliLog(component: string, bindings: Record<string, unknown> = {}): Logger {
  return logger(`cli.${component}`, bindings);
}

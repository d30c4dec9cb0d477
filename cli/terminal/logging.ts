import { logger, setLogDestination, type Logger } from "../../broker/index.js";
import { boundedLogFromEnv } from "../mesh-host/bounded-log.js";
import { clock, oneLine, terminalSafeJson } from "./output.js";

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
  const shape = format === "text" ? (line: string) => humanLine(line, !!opts.debug) : opts.debug ? (line: string) => line : withoutStacks;
  // A process `cotal up` (or `cotal web --detach`) started writes its log file itself, bounded.
  const file = boundedLogFromEnv();
  const write = (line: string) => void (once(line) && (file ?? process.stderr).write(shape(line)));
  held = new HeldErrors(write);
  setLogDestination({ write: (line: string) => held!.offer(line) || write(line) });
  process.once("exit", () => held?.flush());
}

let held: HeldErrors | undefined;

/**
 * The command failed with `err`, which main is about to say in a sentence: error log lines of
 * the same failure, still held, are dropped (each error is said once); others are written now.
 */
export function settleHeldErrors(err: unknown): void {
  held?.settle(err);
}

/** How long an error log line waits for the command's own report of the same failure, ms. */
const HOLD_MS = 1_000;

/**
 * Error records that carry an `err` are held for a moment before they are written. A library
 * logs a failure where it sees it (the broker refusing a publish arrives on the connection's
 * status, a join logs why it was undone) and the command then throws the same failure, which
 * main words for a person: without the hold, stderr shows it twice (a log line, then the sentence).
 */
export class HeldErrors {
  private held: Array<{ line: string; message?: string; subject?: string }> = [];
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly write: (line: string) => void,
    private readonly holdMs = HOLD_MS,
  ) {}

  /** Hold `line` if it is an error record with an `err`; false when it should be written now. */
  offer(line: string): boolean {
    let rec: { level?: number; subject?: unknown; err?: { message?: unknown; subject?: unknown } };
    try {
      rec = JSON.parse(line) as typeof rec;
    } catch {
      return false;
    }
    if ((rec.level ?? 0) < 50 || !rec.err) return false;
    const subject = typeof rec.subject === "string" ? rec.subject : typeof rec.err.subject === "string" ? rec.err.subject : undefined;
    this.held.push({ line, ...(typeof rec.err.message === "string" ? { message: rec.err.message } : {}), ...(subject ? { subject } : {}) });
    this.timer ??= setTimeout(() => this.flush(), this.holdMs).unref();
    return true;
  }

  /** Drop what `err` (or an error in its cause chain) already says; write the rest. */
  settle(err: unknown): void {
    const chain = causes(err);
    const messages = chain.map((e) => e.message).filter((m) => m.length > 0);
    const subjects = new Set(chain.map((e) => (e as { subject?: unknown }).subject).filter((s): s is string => typeof s === "string"));
    // pino's serializer appends the causes' messages to an error's own: compare the start.
    this.held = this.held.filter((h) => !((h.subject && subjects.has(h.subject)) || (h.message && messages.some((m) => h.message!.startsWith(m)))));
    this.flush();
  }

  /** Write every held line. */
  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const lines = this.held;
    this.held = [];
    for (const h of lines) this.write(h.line);
  }
}

/** An error and its causes, outermost first (at most 8: a cycle ends there). */
function causes(err: unknown): Error[] {
  const out: Error[] = [];
  for (let e: unknown = err; e instanceof Error && out.length < 8; e = e.cause) out.push(e);
  return out;
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

/**
 * Make this process log at the service level, as JSON with its stacks (the `mesh serve` command,
 * into its log file): to the bounded file `cotal up` named (COTAL_SERVICE_LOG_FILE), else to stderr.
 */
export function useServiceLogLevel(): void {
  process.env.COTAL_LOG_LEVEL = serviceLogLevel();
  setLogDestination(boundedLogFromEnv());
}

/** A child logger of the CLI. */
export function cliLog(component: string, bindings: Record<string, unknown> = {}): Logger {
  return logger(`cli.${component}`, bindings);
}

/** How `cotal logs` prints a line: for a person, or as one JSON object. */
export type LogsFormat = "human" | "json";

/** One line of a log file, read: a pino record, a nats-server line, or text we could not read. */
export interface LogEntry {
  /** Unix ms, when the line says. */
  time?: number;
  /** pino's numeric level (30 info, 40 warning, 50 error …); none for a line that is neither (a crash's trace). */
  level?: number;
  /** The component that wrote it (pino's `component` binding, or `nats-server`). */
  component?: string;
  msg: string;
  /** The record's other fields (pino). */
  fields: Record<string, unknown>;
}

const NATS_LEVELS: Record<string, number> = { TRC: 10, DBG: 20, INF: 30, WRN: 40, ERR: 50, FTL: 60 };
/** `[pid] 2026/12/01 15:33:23.826449 [ERR] text` (nats-server's default, local time). */
const NATS_LINE = /^\[\d+\] (\d{4})\/(\d\d)\/(\d\d) (\d\d):(\d\d):(\d\d)\.(\d+) \[([A-Z]{3})\] (.*)$/;
const RESERVED = new Set(["level", "time", "msg", "component"]);
/** Fields a person does not need on every line. */
const QUIET = new Set(["err", "pid", "hostname"]);

/** Read one line of a mesh process's log (`.cotal/logs/*.log`). */
export function parseLogLine(line: string): LogEntry {
  if (line.startsWith("{")) {
    try {
      const rec = JSON.parse(line) as Record<string, unknown>;
      return {
        ...(typeof rec.time === "number" ? { time: rec.time } : {}),
        level: typeof rec.level === "number" ? rec.level : 30,
        ...(typeof rec.component === "string" ? { component: rec.component } : {}),
        msg: typeof rec.msg === "string" ? rec.msg : "",
        fields: Object.fromEntries(Object.entries(rec).filter(([k]) => !RESERVED.has(k))),
      };
    } catch {
      // not JSON after all: the text as it is
    }
  }
  const m = NATS_LINE.exec(line);
  if (m) {
    const [y, mo, d, h, mi, s] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
    const ms = Math.floor(Number(m[7]!.slice(0, 3).padEnd(3, "0")));
    return { time: new Date(y, mo - 1, d, h, mi, s, ms).getTime(), level: NATS_LEVELS[m[8]!] ?? 30, component: "nats-server", msg: m[9]!, fields: {} };
  }
  return { msg: line, fields: {} };
}

/**
 * A log line for a person: `15:33:23  info     mesh-service  registered  who=local.gina`. Any
 * string in it may come from a peer (a name, a channel, a message's text), so control
 * characters are escaped, never printed raw.
 */
export function logLineForPeople(e: LogEntry): string {
  if (e.level === undefined) return oneLine(e.msg);
  const time = e.time !== undefined ? clock(e.time) : "--:--:--";
  const err = e.fields.err as { message?: unknown } | undefined;
  const fields = Object.entries(e.fields)
    .filter(([k]) => !QUIET.has(k))
    .map(([k, v]) => `${k}=${typeof v === "string" && /^[\w.:@/+,-]+$/.test(v) ? v : JSON.stringify(v)}`);
  const msg = e.msg + (typeof err?.message === "string" ? `: ${err.message}` : "");
  return oneLine([time, (LEVELS[e.level] ?? "info").padEnd(7), e.component ?? "-", msg, ...fields].join("  ").trimEnd());
}

/**
 * A log line as one JSON object in pino's shape (numeric level, Unix-ms time, msg), with `log`
 * naming the file it came from, so `cotal logs --json` pipes into pino tools; escaped as every
 * JSON output is.
 */
export function logLineAsJson(e: LogEntry, log: string): string {
  return terminalSafeJson({
    level: e.level ?? 30,
    ...(e.time !== undefined ? { time: e.time } : {}),
    log,
    ...(e.component ? { component: e.component } : {}),
    msg: e.msg,
    ...e.fields,
  });
}

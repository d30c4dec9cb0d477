import { spawn } from "node:child_process";
import { closeSync, openSync, readSync, fstatSync, statSync, truncateSync } from "node:fs";
import { processStartTime } from "../runtime/index.js";

/** How a seat process ended. */
export interface SeatExit {
  code: number | null;
  signal: string | null;
}

/** A seat process the manager animates (started by it, or adopted after a manager restart). */
export interface SeatProcess {
  readonly pid: number;
  readonly startTime: string | undefined;
  /** Resolves once the process is proven gone. */
  readonly exited: Promise<SeatExit>;
  /** SIGTERM to its process group, SIGKILL after `graceMs`; resolves when it is gone. */
  stop(graceMs?: number): Promise<SeatExit>;
}

export interface StartOptions {
  argv: string[];
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** Output (stdout and stderr) goes here, appended; kept under `maxLogBytes`. */
  logFile: string;
  maxLogBytes?: number;
}

const POLL_MS = 500;
const DEFAULT_MAX_LOG = 1024 * 1024;

/**
 * The `process` terminal host: a headless child in its own process group (so it outlives a killed
 * manager and can be adopted again), writing straight to a log file the manager keeps bounded.
 */
export function startSeatProcess(o: StartOptions): SeatProcess {
  const fd = openSync(o.logFile, "a", 0o600);
  let child;
  try {
    child = spawn(o.argv[0]!, o.argv.slice(1), { cwd: o.cwd, env: o.env, detached: true, stdio: ["ignore", fd, fd] });
  } finally {
    closeSync(fd);
  }
  child.unref();
  const spawnError = new Promise<SeatExit>((resolve) => child.once("error", () => resolve({ code: 127, signal: null })));
  const exited = Promise.race([new Promise<SeatExit>((resolve) => child.once("exit", (code, signal) => resolve({ code, signal }))), spawnError]);
  const pid = child.pid ?? -1;
  return bounded(seatProcess(pid, pid > 0 ? processStartTime(pid) : undefined, exited), o.logFile, o.maxLogBytes ?? DEFAULT_MAX_LOG);
}

/** Adopt a seat process a previous manager started, if that very process (pid and start time) still runs. */
export function adoptSeatProcess(pid: number, startTime: string, logFile: string, maxLogBytes = DEFAULT_MAX_LOG): SeatProcess | undefined {
  if (processStartTime(pid) !== startTime) return undefined;
  // Not our child: its exit code is not ours to read, so the end is seen by polling.
  const exited = new Promise<SeatExit>((resolve) => {
    const t = setInterval(() => {
      if (processStartTime(pid) !== startTime) {
        clearInterval(t);
        resolve({ code: null, signal: null });
      }
    }, POLL_MS);
    t.unref();
  });
  return bounded(seatProcess(pid, startTime, exited), logFile, maxLogBytes);
}

function seatProcess(pid: number, startTime: string | undefined, exited: Promise<SeatExit>): SeatProcess {
  let gone = false;
  void exited.then(() => (gone = true));
  return {
    pid,
    startTime,
    exited,
    async stop(graceMs = 10_000) {
      if (gone || pid <= 0) return exited;
      return stopGroup(pid, exited, graceMs);
    },
  };
}

/** SIGTERM to a process group, SIGKILL after `graceMs`; resolves with its exit once it is gone. */
export async function stopGroup(pid: number, exited: Promise<SeatExit>, graceMs: number): Promise<SeatExit> {
  signalGroup(pid, "SIGTERM");
  const killer = setTimeout(() => signalGroup(pid, "SIGKILL"), graceMs);
  try {
    return await exited;
  } finally {
    clearTimeout(killer);
  }
}

function signalGroup(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(-pid, sig);
  } catch {
    try {
      process.kill(pid, sig);
    } catch {
      /* already gone */
    }
  }
}

/** Keep the log under its bound while the process runs: past it, the file starts again (marked). */
function bounded(p: SeatProcess, logFile: string, maxBytes: number): SeatProcess {
  const t = setInterval(() => {
    try {
      if (statSync(logFile).size > maxBytes) truncateSync(logFile, 0);
    } catch {
      /* the seat's folder was removed */
    }
  }, 5_000);
  t.unref();
  void p.exited.finally(() => clearInterval(t));
  return p;
}

/** The last `maxBytes` of a seat's log, for an `exited` record and refusals. */
export function logTailOf(logFile: string, maxBytes = 2_048): string {
  let fd: number;
  try {
    fd = openSync(logFile, "r");
  } catch {
    return "";
  }
  try {
    const size = fstatSync(fd).size;
    const len = Math.min(size, maxBytes);
    const buf = Buffer.alloc(len);
    readSync(fd, buf, 0, len, size - len);
    return buf
      .toString("utf8")
      .replace(/^[^\n]*\n/, len < size ? "" : "$&")
      .trimEnd();
  } finally {
    closeSync(fd);
  }
}

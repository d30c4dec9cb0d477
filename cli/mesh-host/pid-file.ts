import { readdirSync, readFileSync, readlinkSync, realpathSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { z } from "zod";
import { describeIssues } from "../../schemas/index.js";
import { processStartTime } from "../../runtime/index.js";

/**
 * A process we started, identified by pid AND start time (field 22 of /proc/<pid>/stat, in
 * clock ticks since boot), so a recycled pid is never mistaken for ours.
 */
export const ProcessRecord = z.object({
  pid: z.number().int().positive(),
  /** /proc/<pid>/stat starttime, clock ticks since boot, as a decimal string. */
  startTime: z.string().regex(/^\d+$/),
  /** What the process is, for people reading the file. */
  command: z.array(z.string()),
  /** When we started it, ISO 8601. */
  startedAt: z.string(),
});
export type ProcessRecord = z.infer<typeof ProcessRecord>;

/** The record of a process that is running now, by its pid. */
export function recordOf(pid: number, command: string[]): ProcessRecord {
  const startTime = processStartTime(pid);
  if (startTime === undefined) throw new Error(`process ${pid} is not running`);
  return { pid, startTime, command, startedAt: new Date().toISOString() };
}

/** True while the recorded process runs: same pid and same start time. */
export function isRunning(rec: ProcessRecord): boolean {
  return processStartTime(rec.pid) === rec.startTime;
}

/** A pid file as read: absent, present but not a record (garbage, truncated), or a record. */
export type RecordRead<T = ProcessRecord> = { kind: "absent" } | { kind: "invalid"; reason: string } | { kind: "ok"; record: T };

/**
 * Read and validate a pid file. An unreadable one is reported as such, never as "nothing
 * runs": the caller must then look for the real process instead of starting another.
 */
export function readRecordFile<T extends ProcessRecord = ProcessRecord>(
  file: string,
  schema: z.ZodType<T> = ProcessRecord as unknown as z.ZodType<T>,
): RecordRead<T> {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return { kind: "absent" };
    return { kind: "invalid", reason: `it cannot be read (${(err as NodeJS.ErrnoException).code ?? "error"})` };
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return { kind: "invalid", reason: "it is not JSON" };
  }
  const r = schema.safeParse(json);
  if (!r.success) return { kind: "invalid", reason: describeIssues(r.error).join("; ") };
  return { kind: "ok", record: r.data };
}

/** A valid pid file's record; undefined when it is absent or unreadable. */
export function readRecord(file: string): ProcessRecord | undefined {
  const r = readRecordFile(file);
  return r.kind === "ok" ? r.record : undefined;
}

/** Write a pid file atomically (a reader sees the old record or the new one, never half). */
export function writeRecord(file: string, rec: ProcessRecord): void {
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(rec, null, 2) + "\n", { mode: 0o600 });
  renameSync(tmp, file);
}

/** The command line of a live process, or undefined. */
export function commandLine(pid: number): string[] | undefined {
  try {
    const raw = readFileSync(`/proc/${pid}/cmdline`, "utf8");
    return raw ? raw.replace(/\0$/, "").split("\0") : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Our own live processes (those whose working directory we may read) whose command line and
 * working directory satisfy `match`, as records. For finding a process whose pid file was lost.
 */
export function findProcesses(match: (argv: string[], cwd: string) => boolean): ProcessRecord[] {
  const found: ProcessRecord[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    if (pid === process.pid) continue;
    let cwd: string;
    try {
      cwd = realpathSync(readlinkSync(`/proc/${pid}/cwd`));
    } catch {
      continue; // gone, or another user's
    }
    const argv = commandLine(pid);
    if (!argv || !match(argv, cwd)) continue;
    try {
      found.push(recordOf(pid, argv));
    } catch {
      // exited meanwhile
    }
  }
  return found;
}

export function removeRecord(file: string): void {
  rmSync(file, { force: true });
}

/**
 * Stop a recorded process: SIGTERM, then SIGKILL after `graceMs`. Signals go only to the
 * process the record names (pid and start time verified before each signal). Resolves with
 * how it ended; `not-running` when it was already gone (or the pid now belongs to another).
 */
export async function stopProcess(rec: ProcessRecord, graceMs = 10_000): Promise<"stopped" | "killed" | "not-running"> {
  if (!isRunning(rec)) return "not-running";
  signal(rec, "SIGTERM");
  if (await exitsWithin(rec, graceMs)) return "stopped";
  if (isRunning(rec)) signal(rec, "SIGKILL");
  await exitsWithin(rec, 5_000);
  return "killed";
}

function signal(rec: ProcessRecord, sig: NodeJS.Signals): void {
  if (!isRunning(rec)) return;
  try {
    process.kill(rec.pid, sig);
  } catch {
    // gone between the check and the signal
  }
}

/** Wait until the recorded process is gone (or is a zombie), up to `ms`. */
export async function exitsWithin(rec: ProcessRecord, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (!isRunning(rec)) return true;
    await sleep(50);
  }
  return !isRunning(rec);
}

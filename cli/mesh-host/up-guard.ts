// What one `cotal up` started, so that an interruption (Ctrl-C, SIGTERM, a closed terminal) or a
// failure at any moment stops it again: the processes it spawned so far, their pid files, and the
// `.cotal/` folder when this run made it. What ran before this `up` is never touched.
import { existsSync, rmSync } from "node:fs";
import type { MeshRoot } from "./mesh-root.js";
import { note } from "../terminal/output.js";
import { isRunning, readRecord, removeRecord, stopProcess, type ProcessRecord } from "./pid-file.js";

interface Started {
  record: ProcessRecord;
  /** The pid file that names it, once written. */
  pidFile: string;
}

/** Processes spawned by this CLI process, in the order they were spawned. */
const started: Started[] = [];

/** Record a process this CLI process just spawned (called where the spawn happens, in the same tick). */
export function noteStarted(record: ProcessRecord, pidFile: string): void {
  started.push({ record, pidFile });
}

/** Exit code of a command ended by SIGINT (128 + 2), as a shell reports it. */
const INTERRUPTED = 130;
const SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP"] as const;
/** How long a process started here may take to stop (the manager stops its seats first). */
const STOP_GRACE_MS = 30_000;

/** A guard over one `cotal up`: `undo` on failure, `release` once it succeeded. */
export interface UpGuard {
  /**
   * Stop what this run started, newest first, and remove its pid files; `.cotal/` too when this run
   * made it. Returns what was stopped; while a signal is being handled it never returns (the process
   * exits 130 when the stop is done).
   */
  undo(): Promise<string[]>;
  /** The run succeeded: signals are no longer this guard's (attach installs its own). Never returns while a signal is being handled. */
  release(): Promise<void>;
}

/**
 * Guard `cotal up` in `root` from now on: a signal stops what it started and exits 130. Processes
 * spawned after the signal (the run goes on while this stops) are stopped too: the loop runs until
 * none is left, then the process exits without yielding again.
 */
export function guardUp(root: MeshRoot): UpGuard {
  const madeRoot = !existsSync(root.dir);
  const from = started.length;
  let undoing: Promise<string[]> | undefined;
  const stopped: Started[] = [];
  const undo = () =>
    (undoing ??= (async () => {
      const said: string[] = [];
      for (let next = started.pop(); next; next = started.length > from ? started.pop() : undefined) {
        if ((await stopProcess(next.record, STOP_GRACE_MS)) !== "not-running") said.push(`${describe(next.record)} pid ${next.record.pid}`);
        stopped.push(next);
      }
      // Synchronous from here on: nothing of the run can write a pid file after these are removed.
      for (const s of stopped) if (names(s.pidFile, s.record)) removeRecord(s.pidFile);
      if (madeRoot && !otherAtWork(root)) rmSync(root.dir, { recursive: true, force: true });
      return said;
    })());
  let signalled = false;
  const onSignal = (sig: NodeJS.Signals) => {
    if (undoing) return; // a second Ctrl-C while stopping: the stop goes on
    signalled = true;
    note(`Received ${sig}: stopping what this \`cotal up\` started…`);
    void undo().then((said) => {
      note(
        said.length
          ? `Stopped ${said.join(", ")}${madeRoot ? ` and removed ${root.dir}` : ""}; what ran before this \`cotal up\` was left alone.`
          : `Nothing had been started${madeRoot ? ` (removed ${root.dir})` : ""}.`,
      );
      process.exit(INTERRUPTED);
    });
  };
  for (const sig of SIGNALS) process.on(sig, onSignal);
  // The run goes on while a signal's stop runs: it must not report, attach or exit before that exit.
  const stayWhileSignalled = () => (signalled ? new Promise<never>(() => undefined) : Promise.resolve());
  return {
    undo: async () => {
      const said = await undo();
      await stayWhileSignalled();
      return said;
    },
    release: async () => {
      await stayWhileSignalled();
      for (const sig of SIGNALS) process.off(sig, onSignal);
      started.length = from;
    },
  };
}

/** Another `cotal up` or `down` holds the mesh's lock (it made `.cotal/` at the same moment): its folder is not ours to remove. */
function otherAtWork(root: MeshRoot): boolean {
  const holder = readRecord(root.lockFile);
  return holder !== undefined && holder.pid !== process.pid && isRunning(holder);
}

/** The pid file still names this process (not one started since by another `cotal up`). */
function names(file: string, rec: ProcessRecord): boolean {
  const now = readRecord(file);
  return now?.pid === rec.pid && now.startTime === rec.startTime;
}

function describe(rec: ProcessRecord): string {
  const argv = rec.command;
  if (argv.some((a) => /(^|\/)nats-server$/.test(a))) return "nats-server";
  if (argv.includes("manager")) return "the manager";
  if (argv.includes("mesh") && argv.includes("serve")) return "the mesh service";
  return argv[0] ?? "a process";
}

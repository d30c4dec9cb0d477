// One lock-file implementation for every process-level lock (the cli's mesh and store locks,
// the connector's hook-socket cleanup lock).
//
// Why not proper-lockfile (the common npm choice): its locks go stale by mtime, so the holder
// must stay alive to keep touching them, and it cannot hand a lock to another process. Ours
// must: the store lock is claimed by `cotal up` and then names nats-server itself, which takes
// no lock of its own and outlives `cotal up --detach`. Node has no flock(2). So: a file created
// with O_EXCL holding a record of its holder, and a caller-given test of whether that holder
// still lives (pid + start time for the cli); an unreadable record counts as "being written"
// for a grace period by its mtime, then as stale.
import { closeSync, openSync, readFileSync, rmSync, statSync, writeSync } from "node:fs";

export interface LockFileOptions {
  /** What the lock file says about its holder (written once, at creation). */
  content: string;
  /**
   * Whether the holder an existing lock file names still lives: `true` held, `false` gone (the
   * lock is taken over), `undefined` cannot tell (unreadable or half-written: the grace rule).
   * Default: always `undefined`, so a lock is stale once older than `graceMs`.
   */
  holderAlive?: (content: string) => boolean | undefined;
  /** How long an existing lock whose holder cannot be told counts as held, ms by its mtime (default 5 000). */
  graceMs?: number;
  /** File mode at creation (default 0o600). */
  mode?: number;
}

/** The outcome of one attempt: taken (remove the file to release), or held by a live holder. */
export type LockFileTake = { taken: true; release: () => void } | { taken: false; holder: string | undefined };

/**
 * Try once to take the lock `file`: create it exclusively with `content`; if it exists, take it
 * over when its holder is gone (or it is older than the grace and unreadable), else report the
 * holder's content. Never waits: the caller decides whether to retry or refuse.
 */
export function takeLockFile(file: string, opts: LockFileOptions): LockFileTake {
  const graceMs = opts.graceMs ?? 5_000;
  for (let attempt = 0; attempt < 2; attempt++) {
    let fd: number;
    try {
      fd = openSync(file, "wx", opts.mode ?? 0o600);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      const content = readOrUndefined(file);
      const alive = content === undefined ? undefined : opts.holderAlive?.(content);
      if (alive === true) return { taken: false, holder: content };
      if (alive === undefined && Date.now() - mtimeOf(file) < graceMs) return { taken: false, holder: content };
      rmSync(file, { force: true }); // its holder is gone
      continue;
    }
    try {
      writeSync(fd, opts.content);
    } finally {
      closeSync(fd);
    }
    return { taken: true, release: () => rmSync(file, { force: true }) };
  }
  return { taken: false, holder: readOrUndefined(file) };
}

function readOrUndefined(file: string): string | undefined {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
}

/** The file's mtime, ms; 0 when it is gone (so it never counts as being written). */
function mtimeOf(file: string): number {
  try {
    return statSync(file).mtimeMs;
  } catch {
    return 0;
  }
}

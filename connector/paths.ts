// Where a seat's local files live: its hook socket, token, pairing and returned-mail files, in
// the per-user control directory (named after COTAL_CONTROL_DIR). Shared by the connector and
// the hook command, so it must stay light: node built-ins only (no zod, no NATS, no schemas/).
import { createHash } from "node:crypto";
import { lstatSync, mkdirSync, chmodSync } from "node:fs";
import os from "node:os";
import path from "node:path";

/** Space token alphabet (kept in step with schemas/tokens.ts by a guard test). */
export const SPACE_RE = /^[A-Za-z0-9_-]{1,64}$/;
/** Owner/actor token alphabet (kept in step with schemas/tokens.ts by a guard test). */
export const PRINCIPAL_TOKEN_RE = /^[A-Za-z0-9_]{1,64}$/;

/** Longest unix socket path we create (Linux `sun_path` is 108 bytes with its NUL). */
const MAX_SOCKET_PATH = 100;

/** Whose files they are. */
export interface SeatKey {
  space: string;
  owner: string;
  actor: string;
}

/** The local files of one principal's seat. */
export interface SeatPaths {
  dir: string;
  /** The unix socket hooks connect to; also the custody lock. */
  socket: string;
  /** The per-launch token of a hand-started session (0600). */
  tokenFile: string;
  /** Serialises stale-socket cleanup between connectors starting at the same moment. */
  cleanupLock: string;
  /** Ids of the mail the last incarnation gave back at shutdown (0600): the next one flags them as possible repeats. */
  returnedFile: string;
}

/**
 * The per-user control directory: `COTAL_CONTROL_DIR` if set, else `$XDG_RUNTIME_DIR/cotal`,
 * else `<tmpdir>/cotal-<uid>`.
 */
export function controlDir(env: NodeJS.ProcessEnv = process.env, override?: string): string {
  if (override) return path.resolve(override);
  if (env.COTAL_CONTROL_DIR) return path.resolve(env.COTAL_CONTROL_DIR);
  if (env.XDG_RUNTIME_DIR && path.isAbsolute(env.XDG_RUNTIME_DIR)) return path.join(env.XDG_RUNTIME_DIR, "cotal");
  return path.join(os.tmpdir(), `cotal-${process.getuid?.() ?? "user"}`);
}

/** Whether a key is made of valid tokens (so it can never escape the control directory). */
export function validSeatKey(k: SeatKey): boolean {
  return SPACE_RE.test(k.space) && PRINCIPAL_TOKEN_RE.test(k.owner) && PRINCIPAL_TOKEN_RE.test(k.actor);
}

/**
 * The files of a principal's seat in `dir`: `<space>.<owner>.<actor>.sock` (tokens
 * never contain dots), or a digest-named socket when that path would be too long for a socket.
 */
export function seatPaths(dir: string, k: SeatKey): SeatPaths {
  if (!validSeatKey(k)) throw new Error(`invalid seat key ${JSON.stringify(k)}`);
  let base = `${k.space}.${k.owner}.${k.actor}`;
  if (Buffer.byteLength(path.join(dir, `${base}.sock`)) > MAX_SOCKET_PATH) {
    base = `h-${createHash("sha256").update(base).digest("hex").slice(0, 24)}`;
  }
  return {
    dir,
    socket: path.join(dir, `${base}.sock`),
    tokenFile: path.join(dir, `${base}.token`),
    cleanupLock: path.join(dir, `${base}.cleanup`),
    returnedFile: path.join(dir, `${base}.returned`),
  };
}

/** The file pairing a Claude process (by pid) with the connector it started. */
export function pairingFile(dir: string, claudePid: number): string {
  return path.join(dir, `claude-${claudePid}.json`);
}

/**
 * Why `dir` is not a safe control directory (not a real directory, not ours, or readable by
 * others), or undefined when it is.
 */
export function unsafeDirReason(dir: string): string | undefined {
  let st;
  try {
    st = lstatSync(dir);
  } catch (err) {
    return `cannot stat it (${(err as NodeJS.ErrnoException).code ?? String(err)})`;
  }
  if (!st.isDirectory()) return "it is not a directory (or it is a symlink)";
  const uid = process.getuid?.();
  if (uid !== undefined && st.uid !== uid) return `it is owned by uid ${st.uid}, not ${uid}`;
  if ((st.mode & 0o077) !== 0) return `its mode is ${(st.mode & 0o777).toString(8)}, not 700`;
  return undefined;
}

/** Create the control directory (0700) if missing; returns why it is unsafe, if it is. */
export function ensureControlDir(dir: string): string | undefined {
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch (err) {
    return `cannot create it (${(err as NodeJS.ErrnoException).code ?? String(err)})`;
  }
  const reason = unsafeDirReason(dir);
  // A directory we just created under a permissive umask: tighten it (only if it is ours).
  if (reason?.startsWith("its mode")) {
    try {
      chmodSync(dir, 0o700);
    } catch {
      return reason;
    }
    return unsafeDirReason(dir);
  }
  return reason;
}

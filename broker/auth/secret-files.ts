import { randomBytes } from "node:crypto";
import {
  chmodSync,
  closeSync,
  existsSync,
  fchmodSync,
  fstatSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeSync,
} from "node:fs";
import { dirname, relative, sep } from "node:path";
import { CotalError } from "../../schemas/index.js";

/** A secret file or folder has modes that would let other users read it. */
export class InsecureSecretError extends CotalError {
  constructor(
    readonly path: string,
    readonly mode: number,
    want: number,
  ) {
    super(
      "insecure-secret",
      `${path} has mode ${mode.toString(8).padStart(4, "0")}: other users could read it; Cotal refuses secrets not kept at ${want.toString(8).padStart(4, "0")}.`,
      {
        remedy: `Run \`chmod ${want.toString(8)} ${path}\` (and check who could have read it).`,
      },
    );
  }
}

/**
 * Create a folder Cotal owns (and its missing parents) with mode 0700, and make an existing
 * one 0700. Only for Cotal's own folders under `.cotal/`: never for a folder the user named.
 */
export function ensureSecretDir(path: string): void {
  mkdirSync(path, { recursive: true, mode: 0o700 });
  chmodSync(path, 0o700);
}

/**
 * Create the missing folders on the way to `dir` with mode 0700 and leave every existing
 * folder exactly as it is (a user's folder, `/tmp` with its sticky bit, …).
 */
function createMissingDirs(dir: string): void {
  const first = mkdirSync(dir, { recursive: true, mode: 0o700 });
  if (first === undefined) return;
  // mkdir's mode is masked by the umask; the folders created just now are made exactly 0700.
  const parts = relative(first, dir).split(sep).filter(Boolean);
  let p = first;
  chmodSync(p, 0o700);
  for (const part of parts) chmodSync((p = `${p}${sep}${part}`), 0o700);
}

/**
 * Write a secret atomically with mode 0600. Missing folders on the way are created 0700;
 * an existing folder keeps its mode. The bytes go to a temp file in the same folder, created
 * exclusively (O_EXCL: never through a file or link someone else put there) with mode 0600,
 * then renamed over `path`, so no reader ever sees a partial or wider-open file.
 */
export function writeSecret(path: string, data: string | Uint8Array): void {
  createMissingDirs(dirname(path));
  const tmp = `${path}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`;
  const fd = openSync(tmp, "wx", 0o600);
  try {
    fchmodSync(fd, 0o600); // the umask may have narrowed it; never wider
    const bytes = typeof data === "string" ? Buffer.from(data, "utf8") : data;
    for (let off = 0; off < bytes.length;) off += writeSync(fd, bytes, off);
    fsyncSync(fd);
  } catch (err) {
    closeSync(fd);
    rmSync(tmp, { force: true });
    throw err;
  }
  closeSync(fd);
  try {
    renameSync(tmp, path);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
}

/**
 * Why a secret file (kept at 0600) or folder (0700) is not private: the error naming its mode
 * and the `chmod` that fixes it; undefined when no group or world bit is set. For reports that
 * list every problem (`cotal doctor`) rather than stop at the first.
 */
export function secretModeProblem(path: string, kind: "file" | "dir"): InsecureSecretError | undefined {
  const mode = statSync(path).mode & 0o7777;
  return mode & 0o077 ? new InsecureSecretError(path, mode, kind === "dir" ? 0o700 : 0o600) : undefined;
}

/** Refuse a secret file that other users could read (any group or world bit). */
export function assertPrivateFile(path: string): void {
  const problem = secretModeProblem(path, "file");
  if (problem) throw problem;
}

/** Read a secret, refusing one that other users could read (checked on the open file). */
export function readSecret(path: string): Buffer {
  const fd = openSync(path, "r");
  try {
    const mode = fstatSync(fd).mode & 0o7777;
    if (mode & 0o077) throw new InsecureSecretError(path, mode, 0o600);
    return readFileSync(fd);
  } finally {
    closeSync(fd);
  }
}

export function secretExists(path: string): boolean {
  return existsSync(path);
}

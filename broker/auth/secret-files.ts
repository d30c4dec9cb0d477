import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { CotalError } from "../../schemas/index.js";

/** A secret file or folder has modes that would let other users read it. */
export class InsecureSecretError extends CotalError {
  constructor(path: string, mode: number, want: number) {
    super("insecure-secret", `${path} has mode ${mode.toString(8)}; Cotal keeps secrets at ${want.toString(8)}.`, {
      remedy: `Run \`chmod ${want.toString(8)} ${path}\` (and check who could have read it).`,
    });
  }
}

/** Create a folder (and parents) with mode 0700. */
export function ensureSecretDir(path: string): void {
  mkdirSync(path, { recursive: true, mode: 0o700 });
  chmodSync(path, 0o700);
}

/** Write a secret atomically with mode 0600 inside a 0700 folder. */
export function writeSecret(path: string, data: string | Uint8Array): void {
  ensureSecretDir(dirname(path));
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, data, { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, path);
}

/** Read a secret, refusing one that other users could read. */
export function readSecret(path: string): Buffer {
  const mode = statSync(path).mode & 0o777;
  if (mode & 0o077) throw new InsecureSecretError(path, mode, 0o600);
  return readFileSync(path);
}

export function secretExists(path: string): boolean {
  return existsSync(path);
}

// A launch's private directory, the same for every runtime: created fresh with mode 0700 (it must
// not exist yet), its files written 0600 and exclusively, nothing written outside it, and removed
// again when a write fails. A file may sit in a folder inside it (an agent CLI whose home has
// folders, e.g. OpenCode's config directory): such folders are made 0700 on the way. Each adapter
// names its directories with its own prefix, and only a directory with that prefix is ever
// written or removed.
import { chmodSync, closeSync, fchmodSync, mkdirSync, openSync, rmSync, writeSync } from "node:fs";
import path from "node:path";
import type { RuntimeLaunch } from "./adapter.js";

export interface PrivateDirRules {
  /** The adapter's directory name prefix (`cotal-claude-`, `cotal-codex-`). */
  prefix: string;
  /** The adapter's typed error for a refusal. */
  fail: (message: string, cause?: unknown) => Error;
}

/** Create the launch's private directory (0700, must not exist yet) and write its files (0600, exclusive). */
export function writePrivateFiles(launch: Pick<RuntimeLaunch, "privateDir" | "files">, rules: PrivateDirRules): void {
  const dir = launch.privateDir;
  if (!path.basename(dir).startsWith(rules.prefix)) throw rules.fail(`Not a Cotal launch directory: ${dir}.`);
  mkdirSync(path.dirname(dir), { recursive: true, mode: 0o700 });
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch (cause) {
    throw rules.fail(`Cannot create the private launch directory ${dir}: ${(cause as NodeJS.ErrnoException).code ?? String(cause)}.`, cause);
  }
  try {
    chmodSync(dir, 0o700); // the umask may only have taken bits away, but be exact
    for (const file of launch.files) {
      const rel = path.relative(dir, file.path);
      if (rel === "" || rel.startsWith("..") || path.isAbsolute(rel)) throw rules.fail(`Launch file ${file.path} is outside the private directory ${dir}.`);
      // A folder inside the private directory is made with its parents, each 0700 (the umask only takes bits away).
      if (path.dirname(rel) !== ".") mkdirSync(path.dirname(file.path), { recursive: true, mode: 0o700 });
      const fd = openSync(file.path, "wx", 0o600);
      try {
        fchmodSync(fd, 0o600);
        writeSync(fd, file.content);
      } finally {
        closeSync(fd);
      }
    }
  } catch (err) {
    removePrivateDir(dir, rules.prefix);
    throw err;
  }
}

/** Remove a launch's private directory (idempotent; only one named with `prefix`). */
export function removePrivateDir(dir: string, prefix: string): void {
  if (!path.basename(dir).startsWith(prefix)) return;
  rmSync(dir, { recursive: true, force: true });
}

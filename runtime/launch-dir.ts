// A launch's private directory name, the same for every runtime: `<prefix><space>-<name>-<random>`
// under the runtime directory, from an identity whose parts are plain name segments (so it can
// never climb out of that directory), with absolute working and runtime directories.
// No schemas/ import: the hook command's bundle reaches runtime/ and must stay without zod
// (test/connector/guard.test.ts); the space and principal grammars were checked where they
// entered (spawn, run), this only refuses what could leave the directory.
import { randomBytes } from "node:crypto";
import path from "node:path";

/** Letters, digits, '_' and '-', at most 64: never '/', '.', or empty. */
const SEGMENT = /^[A-Za-z0-9_-]{1,64}$/;

/** The private directory of one launch; `fail` makes the adapter's typed error. */
export function privateLaunchDir(
  c: { name: string; space: string; cwd: string; runtimeDir: string },
  prefix: string,
  fail: (message: string) => Error,
): string {
  for (const [what, p] of [
    ["working directory", c.cwd],
    ["runtime directory", c.runtimeDir],
  ] as const)
    if (!path.isAbsolute(p)) throw fail(`The ${what} must be an absolute path, not ${JSON.stringify(p)}.`);
  if (!SEGMENT.test(c.name) || !SEGMENT.test(c.space)) throw fail(`Invalid identity ${JSON.stringify(c.space)}/${JSON.stringify(c.name)}.`);
  return path.join(c.runtimeDir, `${prefix}${c.space}-${c.name}-${randomBytes(6).toString("hex")}`);
}

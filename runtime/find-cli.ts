// Where an agent CLI's executable is: the variable that names it, else the first on PATH.
import { accessSync, constants, statSync } from "node:fs";
import path from "node:path";
import type { Env } from "./adapter.js";

/** `binEnv`'s file when it is executable, else `command` on PATH; with notes for the log. */
export function findCli(cli: { binEnv: string; command: string }, env: Env): { path: string | undefined; notes: string[] } {
  const notes: string[] = [];
  const named = env[cli.binEnv];
  if (named) {
    const abs = path.resolve(named);
    if (isExecutableFile(abs)) return { path: abs, notes };
    notes.push(`${cli.binEnv}=${named} is not an executable file; looked for ${cli.command} on PATH instead.`);
  }
  for (const dir of (env.PATH ?? "").split(path.delimiter)) {
    if (!dir || !path.isAbsolute(dir)) continue;
    const candidate = path.join(dir, cli.command);
    if (isExecutableFile(candidate)) return { path: candidate, notes };
  }
  return { path: undefined, notes };
}

function isExecutableFile(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return statSync(file).isFile();
  } catch {
    return false;
  }
}

// Spawning a launch with a private directory, the same for every runtime: write the directory
// (private-files.ts), spawn exactly the launch's argv, env and cwd, hand over its stdin, and remove
// the directory once the process has exited (or failed to start).
import { spawn, type ChildProcess } from "node:child_process";
import type { LaunchedRuntime, RuntimeLaunch, SpawnOptions } from "./adapter.js";
import { removePrivateDir, writePrivateFiles, type PrivateDirRules } from "./private-files.js";

/**
 * Write the launch's private directory, spawn it, hand over the prompt; the directory goes when the
 * process does. `write` writes the directory (default: create it with its files; an adapter that
 * writes it while building the launch skips what is written).
 */
export function spawnWithPrivateDir(
  launch: RuntimeLaunch,
  opts: SpawnOptions,
  rules: PrivateDirRules,
  write: (launch: RuntimeLaunch) => void = (l) => writePrivateFiles(l, rules),
): LaunchedRuntime {
  write(launch);
  const cleanup = (): void => removePrivateDir(launch.privateDir, rules.prefix);
  let child: ChildProcess;
  try {
    child = spawn(launch.command, launch.args, { cwd: launch.cwd, env: launch.env, stdio: opts.stdio ?? "pipe", detached: opts.detached ?? false });
  } catch (err) {
    cleanup();
    throw err;
  }
  child.once("exit", cleanup);
  child.once("error", cleanup);
  if (launch.stdin !== undefined) child.stdin?.end(launch.stdin);
  return { child, privateDir: launch.privateDir };
}

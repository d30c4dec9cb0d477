// Persona privacy on disk: the launch files (persona, MCP config) live in a fresh 0700
// directory as 0600 files, and the directory goes once Claude is proven gone, whether the
// launcher sees the exit itself or was killed first (the detached watcher).
import { spawn, type ChildProcess, type StdioOptions } from "node:child_process";
import { removePrivateDir as removeDir, writePrivateFiles, type PrivateDirRules } from "../runtime/index.js";
import { claudeLaunchError } from "./errors.js";
import type { ClaudeLaunch } from "./launch-builder.js";
import { PRIVATE_DIR_PREFIX, startPersonaWatcher } from "./persona-watcher.js";
import { processStartTime } from "../runtime/index.js";

const RULES: PrivateDirRules = { prefix: PRIVATE_DIR_PREFIX, fail: (message, cause) => claudeLaunchError(message, { cause }) };

/** Create the launch's private directory (0700, must not exist yet) and write its files (0600, exclusive). */
export function writeLaunchFiles(launch: Pick<ClaudeLaunch, "privateDir" | "files">): void {
  writePrivateFiles(launch, RULES);
}

/** Remove a launch's private directory (idempotent). */
export function removePrivateDir(dir: string): void {
  removeDir(dir, PRIVATE_DIR_PREFIX);
}

export interface LaunchClaudeOptions {
  /** Default: `inherit` for the foreground profile, pipes otherwise (read them, or a full pipe stalls Claude). stdin must be a pipe when the launch has stdin text. */
  stdio?: "pipe" | "inherit" | "ignore" | StdioOptions;
  /** Start Claude in its own process group (managed seats, so a kill reaches its MCP servers and hooks). Never for the foreground profile. */
  detached?: boolean;
  /** Watcher poll interval, ms (default 500). */
  watcherPollMs?: number;
}

export interface LaunchedClaude {
  child: ChildProcess;
  privateDir: string;
  /** The detached watcher's pid (undefined if it could not be started). */
  watcherPid?: number;
}

/**
 * Write the launch files, spawn Claude with exactly the launch's command, args, cwd and env,
 * hand it its stdin text, and make sure the private directory goes when Claude does: on the
 * child's exit here, and by a detached watcher if this process dies first.
 */
export function launchClaude(launch: ClaudeLaunch, opts: LaunchClaudeOptions = {}): LaunchedClaude {
  const stdio = opts.stdio ?? (launch.profile === "foreground" ? "inherit" : "pipe");
  const stdinIsPipe = stdio === "pipe" || (Array.isArray(stdio) && (stdio[0] === "pipe" || stdio[0] === undefined));
  if (launch.stdin !== undefined && !stdinIsPipe) throw claudeLaunchError("This launch writes its prompt to Claude's stdin, so stdin must be a pipe.");

  writeLaunchFiles(launch);
  const cleanup = (): void => removePrivateDir(launch.privateDir);
  let child: ChildProcess;
  try {
    child = spawn(launch.command, launch.args, { cwd: launch.cwd, env: launch.env, stdio, detached: opts.detached ?? false });
  } catch (err) {
    cleanup();
    throw err;
  }
  child.once("exit", cleanup);
  child.once("error", cleanup); // e.g. ENOENT: there is no process to wait for

  let watcherPid: number | undefined;
  if (child.pid !== undefined) {
    // Unreadable start time (Claude already gone, or no /proc): the watcher then judges by pid alone.
    watcherPid = startPersonaWatcher({ dir: launch.privateDir, pid: child.pid, start: processStartTime(child.pid), pollMs: opts.watcherPollMs });
  }
  if (launch.stdin !== undefined && child.stdin) {
    child.stdin.on("error", () => {}); // Claude may exit before reading it
    child.stdin.end(launch.stdin);
  }
  return { child, privateDir: launch.privateDir, ...(watcherPid !== undefined ? { watcherPid } : {}) };
}

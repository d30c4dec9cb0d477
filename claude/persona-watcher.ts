// The persona watcher: a tiny detached process that outlives the launcher, polls one Claude
// process and removes the private launch directory (persona, MCP config) once that process is
// proven gone. "Gone" is: no /proc entry, a zombie, or a different start time at that pid (the
// pid was reused). It runs an inline script with this node binary, so it needs no file of its
// own next to a bundle.
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { claudeLaunchError } from "./errors.js";
import { processStartTime, statFields } from "../runtime/index.js";

/** Launch directories are named so; the watcher refuses to remove anything else. */
export const PRIVATE_DIR_PREFIX = "cotal-claude-";

/**
 * The watcher program (CommonJS, for `node -e`). argv: dir, pid, start time (or `-`), poll ms.
 * Kept in plain JS on purpose: it must not depend on anything a bundler rewrites.
 */
export const WATCHER_SCRIPT = `"use strict";
const fs = require("node:fs");
const path = require("node:path");
const [dir, pidArg, startArg, pollArg] = process.argv.slice(1);
const pid = Number(pidArg);
const poll = Math.max(20, Number(pollArg) || 500);
if (!path.isAbsolute(dir || "") || !path.basename(dir).startsWith(${JSON.stringify(PRIVATE_DIR_PREFIX)}) || !(pid > 0)) process.exit(2);
for (const s of ["SIGINT", "SIGHUP", "SIGPIPE"]) process.on(s, () => {});
const hasProc = fs.existsSync("/proc/self/stat");
function gone() {
  if (hasProc) {
    let stat;
    try { stat = fs.readFileSync("/proc/" + pid + "/stat", "utf8"); }
    catch (e) { return e.code === "ENOENT" || e.code === "ESRCH"; }
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return f[0] === "Z" || f[0] === "X" || (startArg !== "-" && f[19] !== startArg);
  }
  try { process.kill(pid, 0); return false; } catch (e) { return e.code === "ESRCH"; }
}
function tick() {
  if (!fs.existsSync(dir)) return;
  if (gone()) { fs.rmSync(dir, { recursive: true, force: true }); return; }
  setTimeout(tick, poll);
}
tick();
`;

/** Whether the process `pid` (started at `start`, if known) is proven gone. */
export function processGone(pid: number, start?: string): boolean {
  if (existsSync("/proc/self/stat")) {
    let fields: string[] | undefined;
    try {
      fields = statFields(readFileSync(`/proc/${pid}/stat`, "utf8"));
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      return code === "ENOENT" || code === "ESRCH";
    }
    return fields[0] === "Z" || fields[0] === "X" || (start !== undefined && fields[19] !== start);
  }
  try {
    process.kill(pid, 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "ESRCH";
  }
}

export interface PersonaWatcherOptions {
  /** The private launch directory to remove (its name starts with `cotal-claude-`). */
  dir: string;
  /** The Claude process to wait for. */
  pid: number;
  /** Its start time ({@link processStartTime}); read now when not given. */
  start?: string;
  /** Poll interval, ms (default 500). */
  pollMs?: number;
}

/**
 * Start a detached watcher (its own session, no stdio, an empty environment) that removes
 * `dir` once `pid` is gone; it exits early if `dir` disappears first. Returns its pid.
 */
export function startPersonaWatcher(opts: PersonaWatcherOptions): number | undefined {
  if (!path.isAbsolute(opts.dir) || !path.basename(opts.dir).startsWith(PRIVATE_DIR_PREFIX)) {
    throw claudeLaunchError(`Refusing to watch ${JSON.stringify(opts.dir)}: not a Cotal launch directory.`);
  }
  const start = opts.start ?? processStartTime(opts.pid) ?? "-";
  const watcher = spawn(
    process.execPath,
    ["--optimize-for-size", "--max-semi-space-size=1", "-e", WATCHER_SCRIPT, opts.dir, String(opts.pid), start, String(opts.pollMs ?? 500)],
    {
      detached: true,
      stdio: "ignore",
      env: {},
    },
  );
  watcher.on("error", () => {}); // the launcher's own exit handler still cleans up
  watcher.unref();
  return watcher.pid;
}

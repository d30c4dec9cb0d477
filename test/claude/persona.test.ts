// Persona privacy on disk: a fresh 0700 directory with 0600 files, and a detached watcher that
// removes it once the watched process is proven gone (by pid and start time).
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { buildClaudeLaunch, processGone, startPersonaWatcher, writeLaunchFiles } from "../../claude/index.js";
import { processStartTime } from "../../runtime/index.js";
import { until } from "../../testbed/until.js";
import { RuntimeLaunchError } from "../../runtime/index.js";

const runtimeDir = mkdtempSync(path.join(os.tmpdir(), "cotal-persona-"));
const started: ChildProcess[] = [];
afterEach(() => {
  for (const child of started.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
});
afterAll(() => rmSync(runtimeDir, { recursive: true, force: true }));

const mode = (p: string): string => (statSync(p).mode & 0o777).toString(8);

function launchWithPersona(persona = "You keep the keys.") {
  return buildClaudeLaunch({
    profile: "seat",
    persona,
    cwd: runtimeDir,
    identity: { name: "alice", space: "team", launchMaterialPath: path.join(runtimeDir, "m.json") },
    connectorEntry: "/opt/cotal/dist/connector.mjs",
    parentEnv: { PATH: process.env.PATH },
    isRoot: false,
    runtimeDir,
  });
}

/** A long sleep we can kill, standing in for Claude. */
function sleeper(): ChildProcess & { pid: number } {
  const child = spawn("sleep", ["30"], { stdio: "ignore" });
  started.push(child);
  if (child.pid === undefined) throw new Error("sleep did not start");
  return child as ChildProcess & { pid: number };
}

describe("launch files", () => {
  it("writes the persona as a 0600 file inside a fresh 0700 directory", () => {
    const launch = launchWithPersona("Persona body.");
    writeLaunchFiles(launch);
    try {
      expect(mode(launch.privateDir)).toBe("700");
      expect(readdirSync(launch.privateDir).sort()).toEqual(["mcp.json", "persona.md"]);
      for (const f of launch.files) expect(mode(f.path), f.path).toBe("600");
      expect(readFileSync(launch.personaFile!, "utf8")).toBe("Persona body.");
    } finally {
      rmSync(launch.privateDir, { recursive: true, force: true });
    }
  });

  it("refuses to reuse an existing directory", () => {
    const launch = launchWithPersona();
    writeLaunchFiles(launch);
    try {
      expect(() => writeLaunchFiles(launch)).toThrow(RuntimeLaunchError);
      expect(existsSync(launch.personaFile!)).toBe(true);
    } finally {
      rmSync(launch.privateDir, { recursive: true, force: true });
    }
  });
});

describe("process identity", () => {
  it("reads a live process's start time and does not call it gone", () => {
    const start = processStartTime(process.pid);
    expect(start).toMatch(/^\d+$/);
    expect(processGone(process.pid, start)).toBe(false);
  });

  it("calls a reused pid gone (same pid, other start time) and a missing pid gone", () => {
    expect(processGone(process.pid, "1")).toBe(true);
    const child = sleeper();
    const pid = child.pid;
    child.kill("SIGKILL");
    return until(() => processGone(pid), 5_000, "the killed sleep to be gone");
  });
});

describe("persona watcher", () => {
  it("removes the private directory once the watched process is gone, not before", async () => {
    const launch = launchWithPersona();
    writeLaunchFiles(launch);
    const child = sleeper();
    const watcherPid = startPersonaWatcher({ dir: launch.privateDir, pid: child.pid, pollMs: 25 });
    expect(watcherPid).toEqual(expect.any(Number));
    await new Promise((r) => setTimeout(r, 300));
    expect(existsSync(launch.personaFile!)).toBe(true);
    child.kill("SIGKILL");
    await until(() => !existsSync(launch.privateDir), 5_000, "the watcher to remove the private directory");
    await until(() => processGone(watcherPid!), 5_000, "the watcher to exit");
  });

  it("treats a live process with another start time as a reused pid, and removes the directory", async () => {
    const launch = launchWithPersona();
    writeLaunchFiles(launch);
    const child = sleeper();
    startPersonaWatcher({ dir: launch.privateDir, pid: child.pid, start: "1", pollMs: 25 });
    await until(() => !existsSync(launch.privateDir), 5_000, "the watcher to remove the directory of a reused pid");
    expect(processGone(child.pid)).toBe(false);
  });

  it("exits when the directory was already removed by the launcher", async () => {
    const launch = launchWithPersona();
    writeLaunchFiles(launch);
    const child = sleeper();
    const watcherPid = startPersonaWatcher({ dir: launch.privateDir, pid: child.pid, pollMs: 25 });
    rmSync(launch.privateDir, { recursive: true, force: true });
    await until(() => processGone(watcherPid!), 5_000, "the watcher to exit once the directory is gone");
    expect(processGone(child.pid)).toBe(false);
  });

  it("refuses to watch a directory that is not a Cotal launch directory", () => {
    expect(() => startPersonaWatcher({ dir: os.homedir(), pid: process.pid })).toThrow(RuntimeLaunchError);
    expect(() => startPersonaWatcher({ dir: "relative/cotal-claude-x", pid: process.pid })).toThrow(RuntimeLaunchError);
  });
});

// Which seat processes run on this machine for a manager's state dir: a seat process names its
// launch material in COTAL_LAUNCH_MATERIAL, `<state dir>/seats/<name>/launch.json`. Read from
// /proc, so a seat is counted while it runs whatever its manager believes. A seat's children
// inherit the variable (a Claude seat's connector and hooks): those helpers do not count, nor any
// process whose parent is of the same seat; what is left is the seat's own process.
import { readdirSync, readFileSync } from "node:fs";
import { join, sep } from "node:path";
import { processStartTime } from "../../runtime/index.js";
import { pidAlive } from "../pid-alive.js";

/** Clock ticks per second of /proc's times (USER_HZ: 100 on every Linux the lab runs on). */
const TICKS_PER_S = 100;

/** When a process started, epoch ms (to /proc's 10 ms), or undefined once it is gone. */
export function processStartedAt(pid: number): number | undefined {
  const ticks = processStartTime(pid);
  if (!ticks) return undefined;
  // The boot's epoch from the uptime (10 ms resolution); /proc/stat's btime is whole seconds.
  const booted = Date.now() - Number(readFileSync("/proc/uptime", "utf8").split(" ")[0]) * 1_000;
  return booted + (Number(ticks) * 1_000) / TICKS_PER_S;
}

/** Seat name → pids of the processes running as that seat under `stateDir`. */
export function seatProcesses(stateDir: string): Map<string, number[]> {
  const prefix = join(stateDir, "seats") + sep;
  const found = new Map<string, number[]>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let env: string;
    try {
      env = readFileSync(`/proc/${entry}/environ`, "latin1");
    } catch {
      continue; // gone meanwhile, or not ours to read
    }
    const material = env
      .split("\0")
      .find((v) => v.startsWith("COTAL_LAUNCH_MATERIAL="))
      ?.slice("COTAL_LAUNCH_MATERIAL=".length);
    if (!material?.startsWith(prefix) || !pidAlive(Number(entry)) || seatHelper(Number(entry))) continue;
    const name = material.slice(prefix.length).split(sep)[0]!;
    found.set(name, [...(found.get(name) ?? []), Number(entry)]);
  }
  for (const [name, pids] of found)
    found.set(
      name,
      pids.filter((pid) => !pids.includes(parentOf(pid) ?? -1)),
    );
  return found;
}

/**
 * A seat's helper, not the seat: its connector (the agent CLI's MCP server) or a hook relay, by the
 * bundle it runs (runtime/connector-entry.ts). A hook whose shell exited first is an orphan whose
 * parent is no longer of the seat: without this it would count as a second process of it.
 */
function seatHelper(pid: number): boolean {
  try {
    return /[/\\](connector|hook)\.mjs\0/.test(readFileSync(`/proc/${pid}/cmdline`, "latin1"));
  } catch {
    return true; // gone meanwhile
  }
}

/** A process's parent pid (field 4 of /proc/PID/stat, after the name in parentheses), or undefined once it is gone. */
function parentOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
    return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
  } catch {
    return undefined;
  }
}

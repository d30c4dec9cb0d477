// Which seat processes run on this machine for a manager's state dir: a seat process names its
// launch material in COTAL_LAUNCH_MATERIAL, `<state dir>/seats/<name>/launch.json`. Read from
// /proc, so a seat is counted while it runs whatever its manager believes.
import { readdirSync, readFileSync } from "node:fs";
import { join, sep } from "node:path";
import { pidAlive } from "../pid-alive.js";

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
    if (!material?.startsWith(prefix) || !pidAlive(Number(entry))) continue;
    const name = material.slice(prefix.length).split(sep)[0]!;
    found.set(name, [...(found.get(name) ?? []), Number(entry)]);
  }
  return found;
}

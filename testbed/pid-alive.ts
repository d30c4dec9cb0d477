import { readFileSync } from "node:fs";

/** True while a process with this pid exists and is not a zombie (Linux /proc). */
export function pidAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return !/\) [ZX] /.test(stat);
  } catch {
    return false;
  }
}

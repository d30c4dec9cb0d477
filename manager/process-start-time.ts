import { readFileSync } from "node:fs";

/**
 * The start time of a live process (field 22 of /proc/<pid>/stat, clock ticks since boot), or
 * undefined when there is no such process or it is a zombie. Pid and start time together name
 * one process: a recycled pid is never mistaken for ours.
 */
export function processStartTime(pid: number): string | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  return parseStartTime(stat);
}

/** Field 22 of a /proc/<pid>/stat line. The command name (field 2) may hold spaces and ')', so fields are counted after its last ')'. */
export function parseStartTime(stat: string): string | undefined {
  const close = stat.lastIndexOf(")");
  if (close < 0) return undefined;
  // After ")" come fields 3, 4, …; field 22 is the 20th of them. A zombie has exited.
  const rest = stat.slice(close + 2).split(" ");
  if (rest[0] === "Z" || rest[0] === "X") return undefined;
  const value = rest[19];
  return value && /^\d+$/.test(value) ? value : undefined;
}

// The one reader of /proc/<pid>/stat. A pid and its start time name one process for good (a
// recycled pid is never mistaken for ours): the persona watcher, the manager's terminal hosts and
// the cli's pid files and locks all identify processes this way. It lives in the Claude binding
// because that is the lowest floor all of them stand on (it depends on schemas only).
// (The persona watcher's detached script repeats the parse inline: it runs as `node -e` text.)
import { readFileSync } from "node:fs";

/**
 * Fields of a /proc/<pid>/stat line from field 3 (state) on: index 0 is the state, 1 the ppid,
 * 19 the start time. The command name (field 2) may hold spaces and ')', so fields are counted
 * after its last ')'.
 */
export function statFields(stat: string): string[] {
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
}

/**
 * The start time of a live process (field 22 of /proc/<pid>/stat, clock ticks since boot), or
 * undefined when there is no such process, it is a zombie, or there is no /proc.
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

/** Field 22 (start time) of a /proc/<pid>/stat line; undefined for a zombie (it has exited) or a malformed line. */
export function parseStartTime(stat: string): string | undefined {
  if (stat.lastIndexOf(")") < 0) return undefined;
  const fields = statFields(stat);
  if (fields[0] === "Z" || fields[0] === "X") return undefined;
  const value = fields[19];
  return value && /^\d+$/.test(value) ? value : undefined;
}

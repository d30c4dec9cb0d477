// CPU per message, the measure a noisy neighbour does not move much: the user + system time the
// bench process spends (process.cpuUsage(): both sides' clients, and the in-process mesh service or
// manager) plus that of the other processes the measured path runs in (nats-server, echo seats,
// raw children, an agent CLI and what it runs), from /proc (each thread's schedstat, else utime +
// stime, and the CPU of the children they reaped), summed over each side's measured blocks only.
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { profiledBlock } from "./cpu-profile.js";

/** Clock ticks per second of /proc's utime and stime (`getconf CLK_TCK`, 100 on Linux). */
function clockTicks(): number {
  try {
    const n = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim());
    return Number.isFinite(n) && n > 0 ? n : 100;
  } catch {
    return 100;
  }
}

let tickUs: number | undefined;

/** The fields of /proc/<pid>/stat after the command name (`fields[0]` is field 3, the state); undefined once it is gone. */
function statFields(pid: number | "self"): string[] | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  // The command name may hold spaces and parentheses: fields are counted after its last ")".
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
}

/** `n` clock ticks of /proc, µs. */
function ticksUs(n: number): number {
  tickUs ??= 1e6 / clockTicks();
  return n * tickUs;
}

/** User + system CPU of `pid` from /proc/<pid>/stat (utime + stime, all threads), µs at the clock tick's resolution (10 ms). */
function statCpuUs(pid: number): number {
  const f = statFields(pid);
  return f ? ticksUs(Number(f[11]) + Number(f[12])) : 0;
}

/**
 * CPU of the children `pid` has waited for once they exited (cutime + cstime: a hook process a
 * bench or an agent CLI ran to its end), µs at the clock tick's resolution; 0 where there is no /proc.
 */
export function reapedChildrenCpuUs(pid: number | "self"): number {
  const f = statFields(pid);
  return f ? ticksUs(Number(f[13]) + Number(f[14])) : 0;
}

/** `pid` and every process below it (children, theirs, …), from /proc's parent links; [pid] where there is no /proc. */
export function processTree(pid: number): number[] {
  const children = new Map<number, number[]>();
  let entries: string[];
  try {
    entries = readdirSync("/proc").filter((e) => /^\d+$/.test(e));
  } catch {
    return [pid];
  }
  for (const e of entries) {
    const parent = Number(statFields(Number(e))?.[1]);
    if (!Number.isFinite(parent)) continue;
    const list = children.get(parent) ?? [];
    list.push(Number(e));
    children.set(parent, list);
  }
  const out: number[] = [];
  for (const queue = [pid]; queue.length;) {
    const p = queue.shift()!;
    out.push(p);
    queue.push(...(children.get(p) ?? []));
  }
  return out;
}

/**
 * CPU time of `pid`'s live threads from /proc/<pid>/task/<tid>/schedstat (its first field, ns on
 * a CPU), µs; undefined where the kernel does not keep it. The same time as utime + stime, but to
 * the nanosecond: a quick run's nats-server spends a few hundred ms per side, which 10 ms ticks
 * would measure to ±10 %.
 */
function schedCpuUs(pid: number): number | undefined {
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return undefined;
  }
  let ns = 0;
  for (const tid of tids) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ")[0]);
    } catch {
      // the thread ended between the listing and the read: its time is gone with it
    }
  }
  return Number.isFinite(ns) ? ns / 1000 : undefined;
}

/** CPU spent by process `pid` so far, all its threads, µs; 0 once it has exited or where there is no /proc. */
export function processCpuUs(pid: number): number {
  return schedCpuUs(pid) ?? statCpuUs(pid);
}

/**
 * CPU spent so far, µs: by this process (`own`), and by `pids` together with the children each of
 * them and this process reaped (`others`: a hook process that ran and exited within a block).
 */
function spentUs(pids: readonly number[]): { own: number; others: number } {
  const own = process.cpuUsage();
  const others = pids.reduce((sum, pid) => sum + processCpuUs(pid) + reapedChildrenCpuUs(pid), reapedChildrenCpuUs("self"));
  return { own: own.user + own.system, others };
}

/** µs of CPU per message, per side: the bench's `cpu/msg` columns. */
export interface CpuPerMessage {
  cotal: number;
  raw: number;
  /** Of each, what the other processes spent (nats-server, seats, children); the rest is the bench process's. */
  outside?: { cotal: number; raw: number };
}

/**
 * CPU spent per side over the blocks it measured, and the messages those blocks moved. Blocks of
 * the sides alternate in one process, so each block is measured alone: `pids()` is read at each
 * block's start and end (a child started for a side counts from its first block on).
 */
export class CpuAccount<S extends string> {
  readonly #spent = new Map<S, { own: number; others: number; messages: number }>();

  constructor(
    readonly pids: () => readonly number[],
    /** What the blocks' profiles are named after with BENCH_PROFILE set (`<label>-<side>-<n>.cpuprofile`, bench/cpu-profile.ts). */
    readonly label = "bench",
  ) {}

  /**
   * Run `block`, charging the CPU spent meanwhile to `side`, for `messages` messages (or as many
   * as `messages` counts from what the block returned).
   */
  async measure<T>(side: S, messages: number | ((out: T) => number), block: () => Promise<T>): Promise<T> {
    const pids = this.pids();
    // The profiler (BENCH_PROFILE) starts before and stops after the figures are read.
    return profiledBlock(`${this.label}-${side}`, async () => {
      const t0 = spentUs(pids);
      const out = await block();
      const t1 = spentUs(pids);
      const s = this.#spent.get(side) ?? { own: 0, others: 0, messages: 0 };
      s.own += t1.own - t0.own;
      s.others += t1.others - t0.others;
      s.messages += typeof messages === "number" ? messages : messages(out);
      this.#spent.set(side, s);
      return out;
    });
  }

  /** µs per message a side spent; NaN before it measured any. */
  perMessage(side: S): number {
    const s = this.split(side);
    return s.own + s.others;
  }

  /** µs per message a side spent in this process (`own`) and in the other processes (`others`: nats-server, seats). */
  split(side: S): { own: number; others: number } {
    const s = this.#spent.get(side);
    if (!s || s.messages === 0) return { own: Number.NaN, others: Number.NaN };
    return { own: s.own / s.messages, others: s.others / s.messages };
  }

  /** Cotal's and raw's µs per message, `raw` naming the raw side to compare with. */
  pair(cotal: S, raw: S): CpuPerMessage {
    return { cotal: this.perMessage(cotal), raw: this.perMessage(raw), outside: { cotal: this.split(cotal).others, raw: this.split(raw).others } };
  }
}

// What every dist/bench*.mjs does around its bench: pick the plan (BENCH_QUICK=1: the quick
// one), say the machine and its load at start, run, print the table, fail when the run's counts
// do not add up (bench/checks.ts), write BENCH_JSON, and release what the run opened (private
// nats-servers, seats, children) at the end, on failure and on Ctrl-C.
import "./quiet.js";
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import path from "node:path";
import { findNatsServer } from "../testbed/nats-server.js";
import { unsound } from "./checks.js";
import { now } from "./context.js";
import { renderMarkdown, renderTable, type BenchReport, type BenchRun } from "./report.js";
import { Teardown } from "./teardown.js";

/** The machine a run measured: cores, Node, nats-server, and whether the counts were the quick ones. */
export function machine(quick: boolean): string {
  let version = "nats-server unknown";
  try {
    version = execFileSync(findNatsServer(), ["--version"], { encoding: "utf8" }).trim();
  } catch {
    // keep "unknown"
  }
  const cpu = cpus();
  return `${cpu.length} × ${cpu[0]?.model ?? "cpu"}, Node ${process.version}, ${version}, loopback${quick ? ", BENCH_QUICK=1" : ""}`;
}

/** Print the table and lines, check the counts, write BENCH_JSON; the exit code (1: the counts do not add up). */
function show(name: string, quick: boolean, load: number[], report: BenchReport, step: (what: string) => void): number {
  step("done");
  console.log(`\n${renderTable(report.rows)}`);
  if (report.lines.length) console.log(`\n${report.lines.join("\n")}`);
  const dir = process.env.BENCH_JSON;
  if (dir) {
    mkdirSync(dir, { recursive: true });
    const file = path.join(dir, `${name}.json`);
    writeFileSync(file, JSON.stringify({ machine: machine(quick), load, quick, ...report, markdown: renderMarkdown(report.rows) }, null, 2) + "\n");
    console.log(`wrote ${file}`);
  }
  const bad = unsound(report.tallies);
  if (!bad.length) return 0;
  console.error(`\n${name}: the run is not sound, its figures do not count:\n  ${bad.join("\n  ")}`);
  return 1;
}

/**
 * Run one bench as its entry: `name` is the bundle's (`bench`, `bench-connector`, …); `planOf`
 * picks the counts. Sets the exit code: 0, 1 (failed, or its counts did not add up), 130 (Ctrl-C).
 */
export async function benchMain<P>(name: string, planOf: (quick: boolean) => P, run: (plan: P, r: BenchRun) => Promise<BenchReport>): Promise<never> {
  const quick = process.env.BENCH_QUICK === "1";
  const td = new Teardown();
  const started = now();
  const [l1 = 0, l5 = 0, l15 = 0] = loadavg();
  console.log(`cotal ${name}: ${machine(quick)}`);
  console.log(`load average at start: ${l1.toFixed(2)}, ${l5.toFixed(2)}, ${l15.toFixed(2)} (1, 5, 15 min)`);
  if (l1 > 0.7) console.log("note: the machine is not idle; other work (an earlier bench too) may skew the figures: compare ratios");
  let interrupted = false;
  const onSignal = (sig: NodeJS.Signals) => {
    if (interrupted) return;
    interrupted = true;
    console.error(`\n${sig}: stopping the bench and what it started`);
    void td.close().finally(() => process.exit(130));
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  const step = (what: string) => console.log(`[${((now() - started) / 1000).toFixed(1)} s] ${what}`);
  let code = 0;
  try {
    const report = await run(planOf(quick), { td, step });
    if (report.skipped) console.log(`skipped: ${report.skipped}`);
    else code = show(name, quick, [l1, l5, l15], report, step);
  } catch (err) {
    if (interrupted) await new Promise(() => undefined); // the signal handler exits once everything is closed
    console.error(`${name} failed:`, err);
    code = 1;
  } finally {
    if (!interrupted) await td.close();
  }
  // Everything is closed; do not wait on a straggling handle (a reconnect timer, a child's pipe).
  process.exit(code);
}

// What every bench smoke test does: run the bench's smoke plan in-process, release what it opened
// whatever happens, and hold it to the run's invariants (bench/checks.ts): every part reported
// its counts, every message or operation sent arrived once, nothing was left pending. Never a
// time: the figures only have to be figures.
import { expect } from "vitest";
import { unsound } from "../../bench/checks.js";
import type { BenchReport, BenchRun } from "../../bench/report.js";
import { Teardown } from "../../bench/teardown.js";

export async function smoke<P>(run: (plan: P, r: BenchRun) => Promise<BenchReport>, plan: P, parts: readonly string[]): Promise<BenchReport> {
  const td = new Teardown();
  let report: BenchReport;
  try {
    report = await run(plan, { td, step: () => undefined });
  } finally {
    await td.close();
  }
  expect(unsound(report.tallies)).toEqual([]);
  expect(Object.keys(report.tallies).sort()).toEqual([...parts].sort());
  for (const row of report.rows) {
    expect(Number.isFinite(row.cotal), `${row.name}: Cotal figure ${row.cotal}`).toBe(true);
    expect(Number.isFinite(row.raw), `${row.name}: raw figure ${row.raw}`).toBe(true);
    // Where a row measures CPU, both sides spent some (bench/cpu.ts): a side measured over no block would be NaN.
    if (row.cpu)
      expect(
        [row.cpu.cotal, row.cpu.raw].every((us) => us > 0),
        `${row.name}: cpu/msg ${row.cpu.cotal} vs ${row.cpu.raw} µs`,
      ).toBe(true);
  }
  return report;
}

import { writeFileSync } from "node:fs";
import type { Reporter, TestModule } from "vitest/node";

/** How many of the slowest files the closing lines name. */
const SLOWEST = 15;

/**
 * Prints the slowest files (tests and hooks, per project: where the suite's time goes, docs/testing.md)
 * and one plain closing line, `N passed, N failed, N skipped`, after vitest's own summary, so any CI
 * can read the outcome without knowing vitest's format.
 */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    let passed = 0;
    let failed = 0;
    let skipped = 0;
    for (const m of testModules) {
      for (const t of m.children.allTests()) {
        const state = t.result().state;
        if (state === "passed") passed++;
        else if (state === "failed") failed++;
        else skipped++;
      }
      if (m.state() === "failed" && [...m.children.allTests()].length === 0) failed++; // a file that failed to load
    }
    const files = [...testModules].map((m) => ({ name: `${m.project.name} ${m.relativeModuleId}`, ms: m.diagnostic().duration })).sort((a, b) => b.ms - a.ms);
    // Every file's time, for working on the suite's length (docs/testing.md "Where the time goes").
    if (process.env.COTAL_TEST_TIMINGS) writeFileSync(process.env.COTAL_TEST_TIMINGS, `${JSON.stringify(files, null, 1)}\n`);
    const slowest = files.slice(0, SLOWEST);
    if (slowest.length > 0)
      process.stdout.write(`\nslowest files (tests and hooks):\n${slowest.map((f) => `${(f.ms / 1000).toFixed(1).padStart(7)} s  ${f.name}`).join("\n")}\n`);
    process.stdout.write(`\n${passed} passed, ${failed} failed, ${skipped} skipped\n`);
  }
}

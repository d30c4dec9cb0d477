import { writeFileSync } from "node:fs";
import type { Reporter, TestModule } from "vitest/node";
import { closingLines, type RunSummary } from "../../scripts/test-summary.mjs";

/**
 * Prints the slowest files (tests and hooks, per project: where the suite's time goes, docs/testing.md)
 * and one plain closing line, `N passed, N failed, N skipped`, after vitest's own summary, so any CI
 * can read the outcome without knowing vitest's format. Under `npm test` (scripts/test-side-by-side.mjs
 * runs two vitest processes side by side) it writes the summary to `COTAL_TEST_SUMMARY` instead, and the
 * runner prints one closing line for both.
 */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    const s: RunSummary = { passed: 0, failed: 0, skipped: 0, files: [] };
    for (const m of testModules) {
      for (const t of m.children.allTests()) {
        const state = t.result().state;
        if (state === "passed") s.passed++;
        else if (state === "failed") s.failed++;
        else s.skipped++;
      }
      if (m.state() === "failed" && [...m.children.allTests()].length === 0) s.failed++; // a file that failed to load
    }
    s.files = [...testModules].map((m) => ({ name: `${m.project.name} ${m.relativeModuleId}`, ms: m.diagnostic().duration })).sort((a, b) => b.ms - a.ms);
    if (process.env.COTAL_TEST_SUMMARY) {
      writeFileSync(process.env.COTAL_TEST_SUMMARY, `${JSON.stringify(s)}\n`);
      return;
    }
    // Every file's time, for working on the suite's length (docs/testing.md "What the suite costs").
    if (process.env.COTAL_TEST_TIMINGS) writeFileSync(process.env.COTAL_TEST_TIMINGS, `${JSON.stringify(s.files, null, 1)}\n`);
    process.stdout.write(closingLines(s));
  }
}

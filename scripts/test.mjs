// `npm test` (docs/testing.md "How npm test runs"): the checks (lint, format, typecheck and the
// bundles, side by side; the tests run only when all passed), then the tests: the cluster project
// beside the others (scripts/test-side-by-side.mjs). The exit code is non-zero when a check or a
// test failed.
//
// With arguments (`npm test -- test/schemas`, `--project all`) it is one plain `vitest run` with
// them, without the checks.
import { BUILD, CHECKS, failedChecksLine, runCheck } from "./check-runner.mjs";
import { vitestRun } from "./vitest-run.mjs";

const extra = process.argv.slice(2);
if (extra.length > 0) {
  const { exited } = vitestRun(extra, { stdio: "inherit" });
  process.exit((await exited).code);
}

const checks = [BUILD, ...CHECKS];
const checked = await Promise.all(checks.map(runCheck));
const failedChecks = checks.filter((_, i) => !checked[i]).map((c) => c.name);
if (failedChecks.length > 0) {
  process.stdout.write(`${failedChecksLine(failedChecks)}The tests were not run.\n`);
  process.exit(1);
}

await import("./test-side-by-side.mjs");

// `npm run checks`: lint, format, typecheck and the bundles side by side, without the tests (each
// is one process and mostly one core). The exit code is non-zero when any failed, after all ended.
// `npm test` runs the same checks first (scripts/test.mjs).
import { BUILD, CHECKS, failedChecksLine, runCheck } from "./check-runner.mjs";

const all = [BUILD, ...CHECKS];
const results = await Promise.all(all.map(runCheck));
const failed = all.filter((_, i) => !results[i]).map((c) => c.name);
if (failed.length > 0) {
  process.stdout.write(failedChecksLine(failed));
  process.exit(1);
}

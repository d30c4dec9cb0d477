// `npm run test:fast` (docs/testing.md "Tiers"): the inner loop. The bundles, then every test that
// needs no agent CLI, browser, container or cluster; vitest.config.ts names what is left out
// (COTAL_TEST_TIER=fast). `npm test` stays the whole suite. No lint, format or typecheck here:
// `node scripts/checks.mjs` runs those. Arguments go to vitest (`npm run test:fast -- test/mesh`).
import { BUILD, runCheck } from "./check-runner.mjs";
import { vitestRun } from "./vitest-run.mjs";

if (!(await runCheck(BUILD))) process.exit(1);
// The `all` project only: `mesh-static` runs test/mesh again on static-auth meshes, which `npm test` keeps.
const args = ["--project", "all", ...process.argv.slice(2)];
const { exited } = vitestRun(args, { stdio: "inherit", env: { ...process.env, COTAL_TEST_TIER: "fast" } });
const { code, secs } = await exited;
process.stdout.write(`\nnpm run test:fast: ${code === 0 ? "passed" : "FAILED"} in ${secs} s (the whole suite: npm test)\n`);
process.exit(code);

// `npm test`'s test run, after the checks: the `cluster` project (JetStream clusters, containers,
// power loss) in one vitest process **beside** the other projects in another, instead of after
// them (docs/testing.md "Vitest projects"). The cluster files mostly wait on raft timers and
// containers, so the two cores they leave idle run the rest; the rest runs at a lower CPU priority
// (nice 10, inherited by every server and CLI it starts), so a busy machine still cannot starve a
// node's election. The rest's output streams; the cluster project's is held and printed whole
// when both have ended, then one closing line for both. The exit code is non-zero when either failed.
//
// With arguments (`npm test -- test/schemas`, `--project all`) it is one plain `vitest run` with them.
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { setPriority, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { closingLines } from "./test-summary.mjs";

const vitest = join(dirname(createRequire(import.meta.url).resolve("vitest/package.json")), "vitest.mjs");
/** Niceness of the projects that run beside the cluster project (0 is normal, 19 the lowest). */
const BESIDE_NICENESS = 10;

function vitestRun(args, opts) {
  const child = spawn(process.execPath, [vitest, "run", ...args], opts);
  const exited = new Promise((resolve) => {
    child.on("error", (err) => resolve({ code: 1, why: err.message }));
    child.on("close", (code, signal) => resolve({ code: code ?? 1, why: signal ? `killed by ${signal}` : `exit ${code}` }));
  });
  return { child, exited };
}

const extra = process.argv.slice(2);
if (extra.length > 0) {
  const { exited } = vitestRun(extra, { stdio: "inherit" });
  process.exit((await exited).code);
}

const scratch = mkdtempSync(join(tmpdir(), "cotal-test-run-"));
const summaryOf = (name) => join(scratch, `${name}.json`);
const envFor = (name) => ({ ...process.env, COTAL_TEST_SUMMARY: summaryOf(name), ...(process.stdout.isTTY ? { FORCE_COLOR: "1" } : {}) });
const started = Date.now();

// The cluster project first, at normal priority; then this process lowers its own, so the
// other vitest process and everything it starts inherit the lower one.
const cluster = vitestRun(["--project", "cluster"], { stdio: ["ignore", "pipe", "pipe"], env: envFor("cluster") });
let clusterOut = "";
cluster.child.stdout.on("data", (d) => (clusterOut += d));
cluster.child.stderr.on("data", (d) => (clusterOut += d));
let clusterSecs = 0;
cluster.exited.then(() => (clusterSecs = (Date.now() - started) / 1000));
try {
  setPriority(BESIDE_NICENESS);
} catch (err) {
  process.stderr.write(`npm test: could not lower the priority of the projects beside the cluster project (${err.message}); running them at normal priority\n`);
}
const rest = vitestRun(["--project", "all", "--project", "mesh-static"], { stdio: "inherit", env: envFor("rest") });

// Ctrl-C reaches both through the terminal's process group; a CI's TERM is passed on.
for (const sig of ["SIGTERM", "SIGHUP"]) process.on(sig, () => [cluster, rest].forEach((r) => r.child.kill(sig)));

const [restEnd, clusterEnd] = await Promise.all([rest.exited, cluster.exited]);
const restSecs = (Date.now() - started) / 1000;
process.stdout.write(
  `\n── project cluster, run beside the rest: ${clusterEnd.code === 0 ? "passed" : `FAILED (${clusterEnd.why})`}, ${clusterSecs.toFixed(1)} s ──\n${clusterOut}`,
);

const summaries = [summaryOf("rest"), summaryOf("cluster")].flatMap((f) => {
  try {
    return [JSON.parse(readFileSync(f, "utf8"))];
  } catch {
    return []; // that process ended before its reporter wrote (its exit code says why)
  }
});
rmSync(scratch, { recursive: true, force: true });
const all = { passed: 0, failed: 0, skipped: 0, files: [] };
for (const s of summaries) {
  all.passed += s.passed;
  all.failed += s.failed;
  all.skipped += s.skipped;
  all.files.push(...s.files);
}
all.files.sort((a, b) => b.ms - a.ms);
// Every file's time, for working on the suite's length (docs/testing.md "What the suite costs").
if (process.env.COTAL_TEST_TIMINGS) writeFileSync(process.env.COTAL_TEST_TIMINGS, `${JSON.stringify(all.files, null, 1)}\n`);
process.stdout.write(
  `\nnpm test: the rest ${restSecs.toFixed(1)} s (${restEnd.why}), the cluster project beside it ${clusterSecs.toFixed(1)} s (${clusterEnd.why})\n`,
);
process.stdout.write(closingLines(all));
process.exit(restEnd.code !== 0 || clusterEnd.code !== 0 || summaries.length < 2 ? 1 : 0);

// The tests of `npm test`, after its checks: two vitest processes side by side (docs/testing.md
// "How npm test runs"), the `cluster` project (JetStream clusters, containers, power loss) and then
// `nats-newest` (the broker's folders again on the newest supported nats-server) in one, the `all`
// and `mesh-static` projects in the other, instead of one after the other. The cluster files mostly
// wait on raft timers and containers, so the cores they leave idle run the rest, and the rest runs
// far longer than they do: nats-newest fills that lane once they end. So that a busy machine cannot
// starve a node's election, that lane runs at this process's CPU priority and the rest ten steps
// lower (nice 10 from a normal shell; inherited by every server and CLI it starts). The rest's
// output streams; the other lane's is printed whole when both have ended, then one closing line
// for both. Exits non-zero when either failed. Runs the projects of the vitest config in its
// working directory (test/harness/side-by-side.test.ts runs it on a small one).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { getPriority, setPriority, tmpdir } from "node:os";
import { join } from "node:path";
import { closingLines } from "./test-summary.mjs";
import { vitestRun } from "./vitest-run.mjs";

/** How many steps of niceness the projects beside the cluster lane get below it (19 is the lowest). */
const BESIDE_STEPS = 10;

const scratch = mkdtempSync(join(tmpdir(), "cotal-test-run-"));
const summaryOf = (name) => join(scratch, `${name}.json`);
const envFor = (name) => ({ ...process.env, COTAL_TEST_SUMMARY: summaryOf(name), ...(process.stdout.isTTY ? { FORCE_COLOR: "1" } : {}) });

// The cluster lane first, at normal priority (its projects one after the other: groupOrder in
// vitest.config.ts); then this process lowers its own, so the other vitest process and everything
// it starts inherit the lower one.
const cluster = vitestRun(["--project", "cluster", "--project", "nats-newest"], { stdio: ["ignore", "pipe", "pipe"], env: envFor("cluster") });
let clusterOut = "";
cluster.child.stdout.on("data", (d) => (clusterOut += d));
cluster.child.stderr.on("data", (d) => (clusterOut += d));
try {
  setPriority(Math.min(19, getPriority() + BESIDE_STEPS));
} catch (err) {
  process.stderr.write(`npm test: could not lower the CPU priority of the projects beside the cluster lane (${err.message}); they run at normal priority\n`);
}
const rest = vitestRun(["--project", "all", "--project", "mesh-static"], { stdio: "inherit", env: envFor("rest") });

// Ctrl-C reaches both through the terminal's process group; a CI's TERM is passed on.
for (const sig of ["SIGTERM", "SIGHUP"]) process.on(sig, () => [cluster, rest].forEach((r) => r.child.kill(sig)));

const [restEnd, clusterEnd] = await Promise.all([rest.exited, cluster.exited]);
process.stdout.write(
  `\n── projects cluster and nats-newest, run beside the rest: ${clusterEnd.code === 0 ? "passed" : `FAILED (${clusterEnd.why})`}, ${clusterEnd.secs} s ──\n${clusterOut}`,
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
  `\nnpm test: the projects all and mesh-static ${restEnd.secs} s (${restEnd.why}), cluster and nats-newest beside them ${clusterEnd.secs} s (${clusterEnd.why})\n`,
);
process.stdout.write(closingLines(all));
process.exit(restEnd.code !== 0 || clusterEnd.code !== 0 || summaries.length < 2 ? 1 : 0);

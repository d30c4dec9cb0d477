// The `cli` project's setup file: under `npm test` that project runs in the cluster project's
// process after the cluster files (scripts/test-side-by-side.mjs), which runs at normal priority so
// that raft timers are not starved. The CLI's files need no such priority: each worker lowers its
// own to the rest's (COTAL_TEST_LATE_NICE, set by the runner), and the servers and CLIs it starts
// inherit it, so these files share the cores with the rest instead of taking them from it.
import { getPriority, setPriority } from "node:os";

const wanted = Number(process.env.COTAL_TEST_LATE_NICE);
if (Number.isInteger(wanted) && getPriority() < wanted) setPriority(Math.min(19, wanted));

// Entry of dist/bench-cluster.mjs (run by `npm run bench`).
import { benchMain } from "../entry.js";
import { CLUSTER_PLANS, clusterBench } from "../cluster.js";

await benchMain("bench-cluster", (quick) => (quick ? CLUSTER_PLANS.quick : CLUSTER_PLANS.full), clusterBench);

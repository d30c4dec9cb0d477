// Entry of dist/bench.mjs (the first of `npm run bench`). BENCH_QUICK=1: smaller counts;
// BENCH_ONLY=latency,fanout: some parts; BENCH_JSON=<folder>: also bench.json there.
import { benchMain } from "../entry.js";
import { MESH_PLANS, meshBench, meshParts } from "../mesh.js";

await benchMain("bench", (quick) => ({ ...(quick ? MESH_PLANS.quick : MESH_PLANS.full), parts: meshParts(process.env.BENCH_ONLY) }), meshBench);

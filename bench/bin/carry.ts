// Entry of dist/bench-carry.mjs (run by `npm run bench`).
import { benchMain } from "../entry.js";
import { CARRY_PLANS, carryBench } from "../carry.js";

await benchMain("bench-carry", (quick) => (quick ? CARRY_PLANS.quick : CARRY_PLANS.full), carryBench);

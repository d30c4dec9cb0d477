// The carry bench (dist/bench-carry.mjs) in its smoke plan: every carry and upload moves the
// whole file, a second carry of the same transcript moves nothing, every raw put stores it whole.
import { describe, it } from "vitest";
import { CARRY_PLANS, carryBench } from "../../bench/carry.js";
import { smoke } from "./smoke.js";

describe("bench: carry (dist/bench-carry.mjs)", () => {
  it("carries, uploads and puts whole files, and a rerun sends 0 bytes", async () => {
    await smoke(carryBench, CARRY_PLANS.smoke, ["carried whole", "carried again, 0 bytes sent", "uploaded whole", "raw put whole"]);
  }, 120_000);
});

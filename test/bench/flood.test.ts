// The flood bench (dist/bench-flood.mjs) in its smoke plan: a real `cotal up` mesh, every ping of
// the bystander answered before and during a one-credential flood, the operator's revoke of the
// flooder answered, and the log lines about the flooder counted.
import { describe, expect, it } from "vitest";
import { FLOOD_PLANS, floodBench } from "../../bench/flood.js";
import { BUNDLES, ensureBuilt, projectRoot } from "../harness/build.js";
import { smoke } from "./smoke.js";

describe("bench: flood (dist/bench-flood.mjs)", () => {
  it("answers every bystander ping, quiet and during the flood, and the operator's revoke of the flooder", async () => {
    ensureBuilt();
    const plan = FLOOD_PLANS.smoke;
    const r = await smoke(floodBench, { ...plan, paths: { cli: BUNDLES.cli, root: projectRoot } }, ["flood quiet", "flood during", "flood revoke"]);
    expect(r.tallies["flood quiet"]!.sent).toBe(plan.quietPings);
    expect(r.rows.map((row) => row.name)).toEqual(["bystander control call p50, flood vs quiet", "bystander control call p99, flood vs quiet"]);
    expect(r.lines.join("\n")).toMatch(/lines about the flooder, counting [\d,]+ more not written/);
  }, 120_000);
});

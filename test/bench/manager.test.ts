// The manager bench (dist/bench-manager.mjs) in its smoke plan: echo seats (dist/echo-seat.mjs with
// its node flags) spawn and join, every DM through them comes back once in each round, and no inbox
// of the space is left holding a message.
import path from "node:path";
import { describe, expect, it } from "vitest";
import { MANAGER_PLANS, managerBench } from "../../bench/manager.js";
import { BUNDLES, ensureBuilt, projectRoot } from "../harness/build.js";
import { smoke } from "./smoke.js";

describe("bench: manager (dist/bench-manager.mjs)", () => {
  it("spawns echo seats, round-trips a DM through each, and reads their memory beside a raw child's", async () => {
    ensureBuilt();
    const plan = MANAGER_PLANS.smoke;
    const r = await smoke(managerBench, { ...plan, paths: { seat: path.join(path.dirname(BUNDLES.cli), "echo-seat.mjs"), root: projectRoot } }, [
      "spawn cotal",
      "spawn raw",
      "round trip cotal",
      "round trip raw",
    ]);
    // Two rounds through the seats; two through as many raw children reading durable consumers, one
    // through a single one, two through raw children with plain subscriptions.
    expect(r.tallies["round trip cotal"]!.sent).toBe(2 * plan.seats);
    expect(r.tallies["round trip raw"]!.sent).toBe(5 * plan.seats);
    expect(r.rows.map((row) => row.name)).toEqual(expect.arrayContaining(["memory per echo seat (PSS)", "memory per echo seat (RSS p50)"]));
  }, 120_000);
});

// The invariants every bench run is held to (bench/checks.ts): a lost, repeated or stranded
// message makes the run unsound, whatever its figures.
import { describe, expect, it } from "vitest";
import { Arrivals, under, unsound } from "../../bench/checks.js";

describe("bench checks", () => {
  it("a sound part: all sent received once, nothing pending", () => {
    expect(unsound({ dm: { sent: 3, received: 3, duplicates: 0, pending: 0 } })).toEqual([]);
  });

  it("names each broken invariant of each part", () => {
    expect(
      unsound({
        lost: { sent: 3, received: 2, duplicates: 0, pending: 0 },
        repeated: { sent: 3, received: 3, duplicates: 1, pending: 0 },
        stranded: { sent: 3, received: 3, duplicates: 0, pending: 2 },
        idle: { sent: 0, received: 0, duplicates: 0, pending: 0 },
      }),
    ).toEqual(["lost: 2 of 3 received", "repeated: 1 duplicate deliveries", "stranded: 2 left pending or unacknowledged", "idle: nothing was sent"]);
    expect(unsound({})).toEqual(["no part reported its counts"]);
  });

  it("counts first arrivals and repeats by id", () => {
    const a = new Arrivals();
    expect([a.add("x"), a.add("y"), a.add("x")]).toEqual([true, true, false]);
    expect(a.tally(2, 0)).toEqual({ sent: 2, received: 2, duplicates: 1, pending: 0 });
    expect(Object.keys(under("latency", { cotal: a.tally(2, 0) }))).toEqual(["latency cotal"]);
  });
});

// An endpoint loads its roster view once: callers that ask while the first load is under way (a
// receipt that stopped waiting for it, then the next send's receipt) share that load instead of
// each starting another presence follow (a subscription, a snapshot walk, a status watcher).
import { afterEach, describe } from "vitest";
import { expect, test } from "../harness/fixtures.js";
import { TestMesh } from "../harness/mesh.js";

let mesh: TestMesh | undefined;
afterEach(async () => {
  await mesh?.close();
  mesh = undefined;
});

describe("the roster view", () => {
  test("concurrent first uses share one load and get the same view", async ({ nats }) => {
    mesh = await TestMesh.start(nats, "rosterload");
    const alice = await mesh.endpoint("alice");
    await alice.join();
    // Bob has not joined, so nothing has loaded his view yet: the three calls race for it.
    const bob = await mesh.endpoint("bob");
    const views = await Promise.all([bob.roster(), bob.roster(), bob.roster()]);
    expect(new Set(views).size).toBe(1);
    expect(views[0]!.entries().map((e) => e.id)).toContain("local.alice");
    expect(await bob.roster()).toBe(views[0]);
  });
});

import { afterEach, describe } from "vitest";
import { collect } from "../harness/deliveries.js";
import { expect, test, until } from "../harness/fixtures.js";
import { TestMesh } from "../harness/mesh.js";

let mesh: TestMesh | undefined;
afterEach(async () => {
  await mesh?.close();
  mesh = undefined;
});

describe("tmp", () => {
  test("idle then a DM", async ({ nats }) => {
    mesh = await TestMesh.start(nats, "qidle");
    const alice = await mesh.joined("alice");
    const bob = await mesh.joined("bob");
    const got = collect(bob);
    await alice.dm("bob", "before");
    await until(() => got.texts().includes("before"), 10_000, "first");
    await new Promise((r) => setTimeout(r, Number(process.env.IDLE_MS ?? 150_000)));
    await alice.dm("bob", "after idle");
    await until(() => got.texts().includes("after idle"), 40_000, "bob gets the DM after idling");
    expect(got.texts()).toEqual(["before", "after idle"]);
  }, 400_000);
});

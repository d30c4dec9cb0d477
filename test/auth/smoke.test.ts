import { afterEach, describe, expect, test } from "vitest";
import { TestMesh } from "../harness/mesh.js";
import { until } from "../../testbed/until.js";
import { collect } from "../harness/deliveries.js";

let mesh: TestMesh | undefined;
afterEach(async () => {
  await mesh?.close();
  mesh = undefined;
});

describe("static auth smoke", () => {
  test("two minted agents join, DM and post on allowed channels", async () => {
    mesh = await TestMesh.startStatic("smoke");
    const aliceCreds = await mesh.mint({ name: "alice", profile: "agent", allowSubscribe: ["general"], allowPublish: ["general"] });
    const bobCreds = await mesh.mint({ name: "bob", profile: "agent", allowSubscribe: ["general"], allowPublish: ["general"], role: "reviewer" });
    const alice = await mesh.endpoint("alice", { creds: aliceCreds });
    const bob = await mesh.endpoint("bob", { creds: bobCreds, role: "reviewer" });
    await alice.join();
    await bob.join();
    const got = collect(bob);
    await bob.joinChannel("general");
    await alice.joinChannel("general");
    const r = await alice.dm("bob", "hello bob");
    expect(r.target).toEqual({ kind: "dm", to: "local.bob", recipient: "idle" });
    await alice.send("general", "hello channel");
    await alice.anycast("reviewer", "review pls");
    await until(() => ["hello bob", "hello channel", "review pls"].every((t) => got.texts().includes(t)), 5_000, "bob gets all three");
    const roster = await alice.roster();
    await until(() => roster.entries().length === 2, 5_000, "alice sees bob");
    expect((await alice.history("general")).length).toBe(1);
  });
});

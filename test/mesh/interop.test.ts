import { afterEach, describe } from "vitest";
import { expect, test, until } from "../harness/fixtures.js";
import { TestMesh } from "../harness/mesh.js";
import { collect } from "../harness/deliveries.js";

let mesh: TestMesh | undefined;
afterEach(async () => {
  await mesh?.close();
  mesh = undefined;
});

describe("the interop scenario", () => {
  test("three endpoints see each other, post, DM, anycast and late-join with history", async ({ nats }) => {
    mesh = await TestMesh.start(nats, "interop");
    const alice = await mesh.joined("alice", { role: "reviewer" });
    const bob = await mesh.joined("bob", { role: "reviewer" });
    const carol = await mesh.joined("carol");

    // presence visible to all
    for (const ep of [alice, bob, carol]) {
      const roster = await ep.roster();
      await until(() => roster.entries().filter((e) => e.status === "idle").length === 3, 5_000, `${ep.id} sees 3 idle peers`);
    }

    const got = { alice: collect(alice), bob: collect(bob), carol: collect(carol) };
    await Promise.all([alice, bob, carol].map((ep) => ep.joinChannel("general")));

    // a channel post reaches subscribers (not its sender)
    const post = await alice.send("general", "hello all");
    expect(post.target).toEqual({ kind: "channel", channel: "general", onlineMembers: 2 });
    await until(() => got.bob.texts().includes("hello all") && got.carol.texts().includes("hello all"), 5_000, "bob and carol get the post");
    expect(got.alice.texts()).not.toContain("hello all");

    // a DM reaches only its recipient
    const dm = await carol.dm("bob", "psst bob");
    expect(dm.target).toEqual({ kind: "dm", to: "local.bob", recipient: "idle" });
    await until(() => got.bob.texts().includes("psst bob"), 5_000, "bob gets the DM");
    const bobDm = got.bob.items.find((d) => d.kind === "dm")!;
    expect(bobDm.from).toEqual({ owner: "local", actor: "carol" });

    // an anycast to a role held by two endpoints reaches exactly one
    const ask = await carol.anycast("reviewer", "please review");
    expect(ask.target).toEqual({ kind: "anycast", role: "reviewer", holders: 2 });
    await until(() => [...got.alice.texts(), ...got.bob.texts()].includes("please review"), 5_000, "one reviewer gets the ask");
    // Exactly once, shown by the consumers rather than by waiting: the role's queue and bob's
    // DM inbox have handed everything out, it was acked, and nothing waits for redelivery.
    const jsm = await mesh.dataJsm();
    const bobInbox = (await jsm.consumers.list("DM_interop").next()).find((c) => c.name.startsWith("dm_local-bob"))!.name;
    for (const [stream, durable] of [
      ["TASK_interop", "svc_reviewer"],
      ["DM_interop", bobInbox],
    ] as const) {
      const drained = async () => {
        const c = await jsm.consumers.info(stream, durable);
        return c.num_pending === 0 && c.num_ack_pending === 0 && c.num_redelivered === 0;
      };
      await until(drained, 5_000, `${durable} on ${stream} to have handed out and been acked for everything, once`);
    }
    const reviewers = [...got.alice.texts(), ...got.bob.texts()].filter((t) => t === "please review");
    expect(reviewers).toHaveLength(1);
    expect([...got.alice.texts(), ...got.bob.texts(), ...got.carol.texts()].filter((t) => t === "psst bob")).toHaveLength(1);

    // a late joiner gets recent history marked historical, then live, with no duplicate
    await bob.send("general", "second post");
    const dave = await mesh.joined("dave");
    const gotDave = collect(dave);
    const joined = await dave.joinChannel("general");
    expect(joined.backfilled).toBe(2);
    await carol.send("general", "after dave joined");
    await until(() => gotDave.texts().includes("after dave joined"), 5_000, "dave gets the live post");
    expect(gotDave.texts()).toEqual(["hello all", "second post", "after dave joined"]);
    expect(gotDave.items.map((d) => d.historical)).toEqual([true, true, false]);
    const roster = await dave.roster();
    await until(() => roster.entries().length === 4, 5_000, "dave sees the current roster");
  });
});

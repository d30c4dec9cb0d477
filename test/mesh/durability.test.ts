import { afterEach, describe } from "vitest";
import { expect, test, until } from "../harness/fixtures.js";
import { TestMesh } from "../harness/mesh.js";
import { collect } from "../harness/deliveries.js";
import { localPrincipal, names } from "../../schemas/index.js";

let mesh: TestMesh | undefined;
afterEach(async () => {
  await mesh?.close();
  mesh = undefined;
});

describe("no message is lost while the recipient is away", () => {
  test("a DM sent before the recipient ever joined waits for their first join, and the receipt says so", async ({ nats }) => {
    mesh = await TestMesh.start(nats, "offline");
    const alice = await mesh.joined("alice");
    const receipt = await alice.dm("bob", "are you there?");
    expect(receipt.target).toEqual({ kind: "dm", to: "local.bob", recipient: "not-joined" });

    const bob = await mesh.joined("bob");
    const got = collect(bob);
    await until(() => got.texts().includes("are you there?"), 45_000, "bob gets the early DM on first join");
  });

  test("a DM sent while the recipient is offline arrives when it reconnects", async ({ nats }) => {
    mesh = await TestMesh.start(nats, "offline2");
    const bob1 = await mesh.joined("bob");
    await bob1.close();
    const alice = await mesh.joined("alice");
    const receipt = await alice.dm("bob", "while you were out");
    expect(receipt.target).toEqual({ kind: "dm", to: "local.bob", recipient: "offline" });
    const bob2 = await mesh.joined("bob");
    const got = collect(bob2);
    await until(() => got.texts().includes("while you were out"), 45_000, "bob gets the DM after reconnecting").catch(async (err: Error) => {
      // Seen once in a loaded full run: say where the DM was (pending, delivered unacked, waiting pulls).
      const jsm = await mesh!.dataJsm();
      const info = await jsm.consumers.info(names.dmStream("offline2"), "dm_local-bob").catch((e: unknown) => e);
      throw new Error(`${err.message}\nbob's DM consumer: ${JSON.stringify(info)}`, { cause: err });
    });
  });

  test("a sender that holds no roster (a one-shot send) gets each recipient's status from the mesh service's lookup", async ({ nats }) => {
    mesh = await TestMesh.start(nats, "oneshot");
    const bob = await mesh.joined("bob");
    const carol = await mesh.joined("carol");
    await carol.close();
    // Never joined: it holds no roster, as `cotal send dm` does not.
    const once = await mesh.endpoint("alice");
    expect((await once.dm("bob", "hi")).target).toEqual({ kind: "dm", to: "local.bob", recipient: "idle" });
    expect((await once.dm("carol", "hi")).target).toEqual({ kind: "dm", to: "local.carol", recipient: "offline" });
    expect((await once.dm("dave", "hi")).target).toEqual({ kind: "dm", to: "local.dave", recipient: "not-joined" });
    await bob.setPresence({ status: "working" });
    await until(async () => (await mesh!.service.lookup(localPrincipal("bob"))).status === "working", 10_000, "the mesh service to see bob working");
    const again = await mesh.endpoint("erin");
    expect((await again.dm("bob", "busy?")).target).toEqual({ kind: "dm", to: "local.bob", recipient: "working" });
    const got = collect(bob);
    await until(() => got.texts().filter((t) => t === "hi").length === 1 && got.texts().includes("busy?"), 10_000, "bob gets both DMs");
  });

  test("an unacked DM is redelivered, flagged as a possible repeat", async ({ nats }) => {
    mesh = await TestMesh.start(nats, "redeliver", { ackWaitMs: 1_000 });
    const bob1 = await mesh.joined("bob");
    const alice = await mesh.joined("alice");
    await alice.dm("bob", "ack me");
    const first = await bob1.deliveries.next();
    expect(first.value?.possibleRepeat).toBe(false);
    await bob1.close(); // crashed before acking

    const bob2 = await mesh.joined("bob");
    const got = collect(bob2);
    await until(() => got.texts().includes("ack me"), 10_000, "the unacked DM is redelivered");
    expect(got.items[0]!.possibleRepeat).toBe(true);
    expect(got.items[0]!.message.id).toBe(first.value!.message.id);
  });

  test("a durable-channel member offline during 100 posts receives all 100 after reconnect", async ({ nats }) => {
    mesh = await TestMesh.start(nats, "durable");
    const carol1 = await mesh.joined("carol");
    await carol1.joinChannel("builds");
    await carol1.close();

    const alice = await mesh.joined("alice");
    for (let i = 0; i < 100; i++) await alice.send("builds", `build ${i}`);

    const carol2 = await mesh.joined("carol");
    const got = collect(carol2);
    const again = await carol2.joinChannel("builds");
    expect(again.backfilled).toBe(0); // the membership already holds them: no history replay
    await until(() => got.items.length >= 100, 10_000, "carol receives the 100 posts");
    expect(got.texts()).toEqual(Array.from({ length: 100 }, (_, i) => `build ${i}`));
    expect(got.items.every((d) => d.source === "durable" && !d.historical)).toBe(true);
  });

  test("leaving a durable channel ends the membership: later posts are not held", async ({ nats }) => {
    mesh = await TestMesh.start(nats, "leave");
    const carol = await mesh.joined("carol");
    await carol.joinChannel("builds");
    await carol.leaveChannel("builds");
    const alice = await mesh.joined("alice");
    await alice.send("builds", "after leave");
    const replay = await carol.joinChannel("builds");
    // a fresh membership starts at the join watermark; the post is only visible as history
    expect(replay.backfilled).toBe(1);
  });

  test("a live-class channel delivers over core subscription, with history backfill deduped", async ({ nats }) => {
    mesh = await TestMesh.start(nats, "live");
    const alice = await mesh.joined("alice");
    await mesh.setChannel("lobby", { class: "live" });
    await alice.send("lobby", "before");
    const bob = await mesh.joined("bob");
    const got = collect(bob);
    expect(await bob.joinChannel("lobby")).toEqual({ class: "live", backfilled: 1 });
    await alice.send("lobby", "after");
    await until(() => got.texts().includes("after"), 45_000, "bob gets the live post");
    expect(got.texts()).toEqual(["before", "after"]);
    expect(got.items.map((d) => d.source)).toEqual(["history", "live"]);
  });

  test("history returns a channel's posts since a time, newest N with a limit", async ({ nats }) => {
    mesh = await TestMesh.start(nats, "history");
    const alice = await mesh.joined("alice");
    for (let i = 0; i < 5; i++) await alice.send("notes", `note ${i}`);
    const all = await alice.history("notes");
    expect(all.map((h) => h.message.parts[0])).toEqual(Array.from({ length: 5 }, (_, i) => ({ kind: "text", text: `note ${i}` })));
    const last2 = await alice.history("notes", { limit: 2 });
    expect(last2.map((h) => h.seq)).toEqual([all[3]!.seq, all[4]!.seq]);
    expect(await alice.history("notes", { sinceMs: Date.now() + 60_000 })).toEqual([]);
    expect(await alice.history("empty")).toEqual([]);
  });
});

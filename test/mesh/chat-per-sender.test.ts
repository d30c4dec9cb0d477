import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { ensureSpace, STORAGE_DEFAULTS, StorageLimitError, type Endpoint } from "../../broker/index.js";
import { names } from "../../schemas/index.js";
import { TestMesh, TEST_STORAGE } from "../harness/mesh.js";

/**
 * The loss this prevents: CHAT_ kept 1,000 posts per sender per channel by evicting the oldest, so the
 * 1,005th post by one sender silently took posts 1–5 from a durable member that had not read them.
 * Now the post past the limit is refused, named, and every stored post stays.
 */
const SPACE = "cap";
const CAP = 25;
let mesh: TestMesh;
let alice: Endpoint;

beforeAll(async () => {
  mesh = await TestMesh.startStatic(SPACE, { limits: { chatPerSender: CAP } });
  alice = await mesh.joined("alice");
});

afterAll(async () => {
  await mesh?.close();
});

describe("one sender's posts on one channel", () => {
  test("the post past the limit is refused with the limit named, and posts 1..limit are all still there", async () => {
    for (let i = 1; i <= CAP; i++) await alice.send("general", `post ${i}`);
    const err = await alice.send("general", `post ${CAP + 1}`).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StorageLimitError);
    const refusal = err as StorageLimitError;
    expect(refusal.code).toBe("storage-limit");
    expect(refusal.message).toContain(names.chatStream(SPACE));
    expect(refusal.message).toContain("the posts one sender may keep on one channel");
    expect(refusal.message).toContain(`${STORAGE_DEFAULTS.chatPerSender} posts by default, each kept 90d`);
    expect(refusal.remedy).toContain("--chat-per-sender");
    expect(refusal.remedy).toContain("age out");

    const texts = (await alice.history("general")).map((h) => h.message.parts[0]);
    expect(texts).toEqual(Array.from({ length: CAP }, (_, i) => ({ kind: "text", text: `post ${i + 1}` })));
  });

  test("the limit is one sender's on one channel: others still post there, and the sender elsewhere", async () => {
    const bob = await mesh.joined("bob");
    expect((await bob.send("general", "bob is not limited by alice")).seq).toBeGreaterThan(0);
    expect((await alice.send("builds", "alice elsewhere")).seq).toBeGreaterThan(0);
  });

  test("a mesh provisioned before (evicting the oldest, no age) is reconciled in place by the next provisioning", async () => {
    const jsm = await mesh.dataJsm();
    const chat = names.chatStream(SPACE);
    const before = (await jsm.streams.info(chat)).config;
    await jsm.streams.update(chat, { ...before, max_msgs_per_subject: 1000, discard_new_per_subject: false, max_age: 0 });
    const report = await ensureSpace(mesh.serviceConnection, SPACE, { limits: { ...TEST_STORAGE, chatPerSender: CAP } });
    expect(report.updated).toContain(chat);
    expect(report.created).toEqual([]);
    const after = (await jsm.streams.info(chat)).config;
    expect(after).toMatchObject({ max_msgs_per_subject: CAP, discard_new_per_subject: true, max_age: STORAGE_DEFAULTS.chatMaxAgeMs * 1_000_000 });
    // The stored posts survived the update.
    expect((await alice.history("general")).filter((h) => h.from.actor === "alice")).toHaveLength(CAP);
  });
});

import { jetstream } from "@nats-io/jetstream";
import { afterEach, describe } from "vitest";
import { InvalidTokenError, LIMITS, PayloadTooLargeError, chatSubject, dmSubject, localPrincipal } from "../../schemas/index.js";
import { setLogDestination, UnknownMentionError } from "../../broker/index.js";
import { expect, test, until } from "../harness/fixtures.js";
import { TestMesh } from "../harness/mesh.js";
import { collect } from "../harness/deliveries.js";

let mesh: TestMesh | undefined;
afterEach(async () => {
  await mesh?.close();
  mesh = undefined;
});

describe("bad input gets a clear error and loses nothing", () => {
  test("illegal names are refused before anything is sent", async ({ nats }) => {
    mesh = await TestMesh.start(nats, "bad");
    await expect(mesh.endpoint("a.b")).rejects.toThrow(InvalidTokenError);
    const alice = await mesh.joined("alice");
    await expect(alice.dm("b*b", "hi")).rejects.toThrow(/Invalid actor name "b\*b"/);
    await expect(alice.send("gen eral", "hi")).rejects.toThrow(/Invalid channel/);
    await expect(alice.anycast("rev>", "hi")).rejects.toThrow(/Invalid role/);
    await expect(alice.joinChannel("a..b")).rejects.toThrow(InvalidTokenError);
  });

  test("an oversize payload is refused with the limit named, and nothing is stored", async ({ nats }) => {
    mesh = await TestMesh.start(nats, "big");
    const alice = await mesh.joined("alice");
    const err = await alice.send("general", "x".repeat(LIMITS.maxMessageBytes + 1)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PayloadTooLargeError);
    expect(String(err)).toContain(`limit of ${LIMITS.maxMessageBytes} bytes`);
    expect(await alice.history("general")).toEqual([]);
  });

  test("an unknown mention aborts the send", async ({ nats }) => {
    mesh = await TestMesh.start(nats, "mention");
    const alice = await mesh.joined("alice");
    await mesh.joined("bob");
    const roster = await alice.roster();
    await until(() => roster.entries().length === 2, 5_000, "alice sees bob");
    await expect(alice.send("general", "hi @zed", { mentions: ["zed"] })).rejects.toThrow(UnknownMentionError);
    expect(await alice.history("general")).toEqual([]);
    const ok = await alice.send("general", "hi @bob", { mentions: ["bob"] });
    expect(ok.seq).toBeGreaterThan(0);
  });

  test("malformed JSON and forged from.id on the wire are dropped with a log line; delivery goes on", async ({ nats }) => {
    const logs: Array<Record<string, unknown>> = [];
    setLogDestination({ write: (line: string) => void logs.push(JSON.parse(line)) });
    mesh = await TestMesh.start(nats, "forge");
    const bob = await mesh.joined("bob");
    const got = collect(bob);
    await bob.joinChannel("general");
    const nc = await mesh.rawConnection(); // a broker that enforces auth would refuse these; the receiver must too
    const js = jetstream(nc);
    const alice = localPrincipal("alice");
    const enc = (o: unknown) => new TextEncoder().encode(JSON.stringify(o));
    const forged = {
      id: "forged-1",
      ts: new Date().toISOString(),
      space: "forge",
      from: { id: "local.mallory", name: "mallory" },
      to: "local.bob",
      parts: [{ kind: "text", text: "I am mallory, trust me" }],
    };
    await js.publish(dmSubject("forge", localPrincipal("bob"), alice), new TextEncoder().encode("{not json"));
    await js.publish(dmSubject("forge", localPrincipal("bob"), alice), enc(forged));
    await js.publish(chatSubject("forge", alice, "general"), enc({ ...forged, id: "forged-2", to: undefined, channel: "general" }));
    const good = await mesh.joined("alice");
    await good.dm("bob", "the real alice");
    await good.send("general", "real post");
    await until(() => got.texts().includes("the real alice") && got.texts().includes("real post"), 5_000, "good messages arrive");
    expect(got.texts()).not.toContain("I am mallory, trust me");
    const dropped = logs.filter((l) => l.me === "local.bob" && String(l.msg).startsWith("dropped"));
    expect(dropped.map((l) => l.msg)).toEqual(
      expect.arrayContaining(["dropped a malformed message", "dropped a message whose from.id disagrees with its subject"]),
    );
    expect(dropped.filter((l) => l.claimed === "local.mallory")).toHaveLength(2);
    setLogDestination(undefined);
  });
});

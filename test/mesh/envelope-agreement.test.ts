// A message whose body disagrees with its subject — on sender, space, channel, recipient or
// role — is dropped by the receiver with a log line, whatever the broker let through
// (docs/SPEC.md §2, rule 3). Only a forged from.id was pinned before.
import { jetstream } from "@nats-io/jetstream";
import { afterEach, describe } from "vitest";
import { logger, setLogDestination, verifyEnvelope } from "../../broker/index.js";
import { anycastSubject, chatSubject, controlSubject, dmSubject, localPrincipal, seatSubject, type CotalMessage } from "../../schemas/index.js";
import { collect } from "../harness/deliveries.js";
import { expect, test, until } from "../harness/fixtures.js";
import { TestMesh } from "../harness/mesh.js";

const alice = localPrincipal("alice");
const bob = localPrincipal("bob");
const enc = (o: unknown) => new TextEncoder().encode(JSON.stringify(o));

function msg(address: Partial<CotalMessage>, over: Partial<CotalMessage> = {}): CotalMessage {
  return {
    id: `m-${Math.random().toString(36).slice(2)}`,
    ts: Date.now(),
    space: "demo",
    from: { id: "local.alice", name: "alice" },
    parts: [{ kind: "text", text: "hi" }],
    ...address,
    ...over,
  } as CotalMessage;
}

/** Run verifyEnvelope with a logger whose lines are kept. */
function verify(subject: string, body: unknown) {
  const lines: Array<Record<string, unknown>> = [];
  setLogDestination({ write: (l: string) => void lines.push(JSON.parse(l)) });
  try {
    const data = body instanceof Uint8Array ? body : enc(body);
    return { result: verifyEnvelope(subject, data, logger("verify-test")), logs: lines };
  } finally {
    setLogDestination(undefined);
  }
}

describe("verifyEnvelope: the body must agree with the subject", () => {
  test("a channel post, a DM and an anycast that agree are accepted, with kind and address from the subject", () => {
    const chat = verify(chatSubject("demo", alice, "team.backend"), msg({ channel: "team.backend" }));
    expect(chat.result).toMatchObject({ kind: "channel", from: alice, channel: "team.backend" });
    expect(chat.result?.message.channel).toBe("team.backend");
    const dm = verify(dmSubject("demo", bob, alice), msg({ to: "local.bob" }));
    expect(dm.result).toMatchObject({ kind: "dm", from: alice, to: bob });
    const any = verify(anycastSubject("demo", "reviewer", alice), msg({ toService: "reviewer" }));
    expect(any.result).toMatchObject({ kind: "anycast", from: alice, role: "reviewer" });
    expect([chat.logs, dm.logs, any.logs].flat()).toEqual([]);
  });

  test.each([
    [
      "a post whose space is another space",
      chatSubject("demo", alice, "general"),
      msg({ channel: "general" }, { space: "other" }),
      "dropped a message whose space disagrees with its subject",
    ],
    [
      "a DM whose space is another space",
      dmSubject("demo", bob, alice),
      msg({ to: "local.bob" }, { space: "other" }),
      "dropped a message whose space disagrees with its subject",
    ],
    [
      "an anycast whose space is another space",
      anycastSubject("demo", "reviewer", alice),
      msg({ toService: "reviewer" }, { space: "other" }),
      "dropped a message whose space disagrees with its subject",
    ],
    [
      "a post whose channel is another channel",
      chatSubject("demo", alice, "general"),
      msg({ channel: "builds" }),
      "dropped a message whose address disagrees with its subject",
    ],
    [
      "a post on a nested channel claiming its parent",
      chatSubject("demo", alice, "team.backend"),
      msg({ channel: "team" }),
      "dropped a message whose address disagrees with its subject",
    ],
    [
      "a post whose body is a DM",
      chatSubject("demo", alice, "general"),
      msg({ to: "local.bob" }),
      "dropped a message whose address disagrees with its subject",
    ],
    [
      "a DM whose recipient is someone else",
      dmSubject("demo", bob, alice),
      msg({ to: "local.carol" }),
      "dropped a message whose address disagrees with its subject",
    ],
    [
      "a DM whose body is a channel post",
      dmSubject("demo", bob, alice),
      msg({ channel: "general" }),
      "dropped a message whose address disagrees with its subject",
    ],
    [
      "an anycast whose role is another role",
      anycastSubject("demo", "reviewer", alice),
      msg({ toService: "builder" }),
      "dropped a message whose address disagrees with its subject",
    ],
    [
      "an anycast whose body is a DM",
      anycastSubject("demo", "reviewer", alice),
      msg({ to: "local.bob" }),
      "dropped a message whose address disagrees with its subject",
    ],
    [
      "a post whose from.id is another principal",
      chatSubject("demo", alice, "general"),
      msg({ channel: "general" }, { from: { id: "local.mallory", name: "mallory" } }),
      "dropped a message whose from.id disagrees with its subject",
    ],
    [
      "a message on a seat-log subject (its writer's, but not a message subject)",
      seatSubject("demo", alice, alice),
      msg({ channel: "general" }),
      "dropped a message on a non-message subject",
    ],
    [
      "a message on a control subject",
      controlSubject("demo", "mesh", "one", "join", alice),
      msg({ channel: "general" }),
      "dropped a message on a non-message subject",
    ],
    ["malformed JSON", chatSubject("demo", alice, "general"), new TextEncoder().encode("{nope"), "dropped a malformed message"],
    [
      "a subject with no trustworthy sender",
      "cotal.demo.chat.lo-cal.alice.general",
      msg({ channel: "general" }),
      "dropped a message on a subject with no trustworthy sender",
    ],
  ])("%s is dropped with a log line", (_what, subject, body, line) => {
    const { result, logs } = verify(subject, body);
    expect(result).toBeUndefined();
    expect(logs).toHaveLength(1);
    expect(logs[0]).toMatchObject({ level: 40, subject, msg: line });
  });

  test("the log line names what the body claimed", () => {
    expect(verify(chatSubject("demo", alice, "general"), msg({ channel: "general" }, { space: "other" })).logs[0]).toMatchObject({ claimed: "other" });
    expect(
      verify(chatSubject("demo", alice, "general"), msg({ channel: "general" }, { from: { id: "local.mallory", name: "mallory" } })).logs[0],
    ).toMatchObject({ claimed: "local.mallory" });
    expect(verify("cotal.demo.chat.lo-cal.alice.general", msg({ channel: "general" })).logs[0]).toMatchObject({ reason: "invalid-token" });
  });
});

let mesh: TestMesh | undefined;
afterEach(async () => {
  await mesh?.close();
  mesh = undefined;
  setLogDestination(undefined);
});

describe("on the wire", () => {
  test("a body that disagrees with its subject on space, channel, recipient or role never reaches the receiver; delivery goes on", async ({ nats }) => {
    const logs: Array<Record<string, unknown>> = [];
    setLogDestination({ write: (line: string) => void logs.push(JSON.parse(line)) });
    mesh = await TestMesh.start(nats, "agree");
    const space = mesh.space;
    const bobEp = await mesh.joined("bob", { role: "reviewer" });
    const got = collect(bobEp);
    await bobEp.joinChannel("general");
    const js = jetstream(await mesh.rawConnection()); // a peer the broker let through: the receiver must still refuse
    const base = (address: Partial<CotalMessage>, text: string, over: Partial<CotalMessage> = {}) =>
      enc(msg(address, { space, parts: [{ kind: "text", text }], ...over }));
    await js.publish(chatSubject(space, alice, "general"), base({ channel: "general" }, "wrong space on a post", { space: "elsewhere" }));
    await js.publish(chatSubject(space, alice, "general"), base({ channel: "builds" }, "wrong channel"));
    await js.publish(dmSubject(space, bob, alice), base({ to: "local.carol" }, "wrong recipient"));
    await js.publish(dmSubject(space, bob, alice), base({ to: "local.bob" }, "wrong space on a DM", { space: "elsewhere" }));
    await js.publish(anycastSubject(space, "reviewer", alice), base({ toService: "builder" }, "wrong role"));
    const aliceEp = await mesh.joined("alice");
    await aliceEp.send("general", "real post");
    await aliceEp.dm("bob", "real dm");
    await aliceEp.anycast("reviewer", "real anycast");
    await until(() => ["real post", "real dm", "real anycast"].every((t) => got.texts().includes(t)), 10_000, "the agreeing messages arrive");
    expect(got.texts().filter((t) => t.startsWith("wrong"))).toEqual([]);
    const dropped = logs.filter((l) => l.me === "local.bob" && String(l.msg).startsWith("dropped")).map((l) => l.msg);
    expect(dropped.filter((m) => m === "dropped a message whose space disagrees with its subject").length).toBeGreaterThanOrEqual(2);
    expect(dropped.filter((m) => m === "dropped a message whose address disagrees with its subject").length).toBeGreaterThanOrEqual(3);
  });
});

import { describe, expect, it } from "vitest";
import {
  anycastSubject,
  chatSubject,
  controlSubject,
  dmSubject,
  eventsSubject,
  filters,
  names,
  postSubject,
  InvalidTokenError,
  localPrincipal,
  parseSubject,
  principal,
  seatSubject,
} from "../../schemas/index.js";

const alice = localPrincipal("alice");
const bob = localPrincipal("bob");

describe("subject parsing", () => {
  const table: Array<[string, string, unknown]> = [
    ["a chat subject with a nested channel", "cotal.demo.chat.local.alice.team.backend", { kind: "chat", space: "demo", from: alice, channel: "team.backend" }],
    ["a chat subject with a one-token channel", "cotal.demo.chat.local.alice.general", { kind: "chat", space: "demo", from: alice, channel: "general" }],
    ["a 7-token DM", "cotal.demo.inst.local.bob.local.alice", { kind: "inst", space: "demo", to: bob, from: alice }],
    ["a 6-token anycast", "cotal.demo.svc.reviewer.local.alice", { kind: "svc", space: "demo", role: "reviewer", from: alice }],
    ["a control call", "cotal.demo.ep.mesh.one.join.local.alice", { kind: "ep", space: "demo", endpoint: "mesh", target: "one", command: "join", from: alice }],
    ["a seat log subject (seat, then its writer)", "cotal.demo.seat.local.alice.local.bob", { kind: "seat", space: "demo", seat: alice, from: bob }],
    [
      "an event-plane frame (read as the plane's name)",
      "cotal.demo.events.local.alice",
      { kind: "events", space: "demo", from: alice, channel: "events.local.alice" },
    ],
    ["an event-plane subject with a channel after it (malformed)", "cotal.demo.events.local.alice.general", { kind: "rejected", reason: "malformed" }],
    ["a seat log subject without a writer (an older layout, dropped)", "cotal.demo.seat.local.alice", { kind: "rejected", reason: "malformed" }],
    ["a chat subject with no channel (malformed)", "cotal.demo.chat.local.alice", { kind: "rejected", reason: "malformed" }],
    ["a DM with 8 tokens (malformed)", "cotal.demo.inst.local.bob.local.alice.x", { kind: "rejected", reason: "malformed" }],
    ["an anycast with 5 tokens (malformed)", "cotal.demo.svc.reviewer.local", { kind: "rejected", reason: "malformed" }],
    ["an owner slot that is not a valid owner (dropped)", "cotal.demo.chat.lo-cal.alice.general", { kind: "rejected", reason: "invalid-token" }],
    ["a DM whose sender owner is a wildcard (dropped)", "cotal.demo.inst.local.bob.*.alice", { kind: "rejected", reason: "invalid-token" }],
    ["a retired/unknown kind (no sender)", "cotal.demo.task.local.alice", { kind: "rejected", reason: "unknown-kind" }],
    ["not a cotal subject", "other.demo.chat.local.alice.general", { kind: "rejected", reason: "malformed" }],
    ["an invalid space", "cotal.de*mo.chat.local.alice.general", { kind: "rejected", reason: "invalid-token" }],
  ];
  it.each(table)("%s", (_what, subject, expected) => {
    expect(parseSubject(subject)).toMatchObject(expected as object);
  });

  it("round-trips every builder through the parser", () => {
    expect(parseSubject(chatSubject("demo", alice, "events.local.alice"))).toEqual({
      kind: "chat",
      space: "demo",
      from: alice,
      channel: "events.local.alice",
    });
    expect(parseSubject(dmSubject("demo", bob, alice))).toEqual({ kind: "inst", space: "demo", to: bob, from: alice });
    expect(parseSubject(anycastSubject("demo", "reviewer", alice))).toEqual({ kind: "svc", space: "demo", role: "reviewer", from: alice });
    expect(parseSubject(controlSubject("demo", "mesh", "one", "join", alice))).toMatchObject({ kind: "ep", command: "join" });
    expect(parseSubject(seatSubject("demo", alice, bob))).toEqual({ kind: "seat", space: "demo", seat: alice, from: bob });
    expect(parseSubject(eventsSubject("demo", alice))).toEqual({ kind: "events", space: "demo", from: alice, channel: "events.local.alice" });
  });
});

describe("an event plane keeps its name and has its own subject and stream", () => {
  it("its owner's post on the plane's name goes to the plane's subject; anyone else's is refused", () => {
    expect(postSubject("demo", alice, "events.local.alice")).toBe("cotal.demo.events.local.alice");
    expect(() => postSubject("demo", bob, "events.local.alice")).toThrow(/only its own seat writes it/);
    expect(postSubject("demo", alice, "general")).toBe("cotal.demo.chat.local.alice.general");
  });
  it("readers filter and read it by its name", () => {
    expect(filters.channel("demo", "events.local.alice")).toBe("cotal.demo.events.local.alice");
    expect(names.streamOfChannel("demo", "events.local.alice")).toBe("EVENTS_demo");
    // Only the exact three-token name is a plane: a nested channel under events. is a channel.
    expect(filters.channel("demo", "events.local.alice.more")).toBe("cotal.demo.chat.*.*.events.local.alice.more");
    expect(names.streamOfChannel("demo", "events.team")).toBe("CHAT_demo");
  });
});

describe("subject building refuses names that would escape a subject", () => {
  const bad = ["a.b", "a*", "a>", "a b", "tab\there", "", "é"];
  it.each(bad)("actor %j is refused, never rewritten", (actor) => {
    expect(() => chatSubject("demo", { owner: "local", actor }, "general")).toThrow(InvalidTokenError);
    expect(() => principal("local", actor)).toThrow(/letters, digits and '_'/);
  });
  it.each(["gen eral", "a..b", "a.*", "a.>", ".a", "a."])("channel %j is refused", (channel) => {
    expect(() => chatSubject("demo", alice, channel)).toThrow(InvalidTokenError);
  });
  it("names the bad token and the allowed alphabet", () => {
    expect(() => anycastSubject("demo", "rev.iewer", alice)).toThrow(/Invalid role "rev.iewer".*letters, digits, '_' and '-'/);
    expect(() => dmSubject("my space", bob, alice)).toThrow(/Invalid space "my space"/);
  });
  it("builds the filters streams and consumers use", () => {
    expect(filters.kind("demo", "chat")).toBe("cotal.demo.chat.>");
    expect(filters.channel("demo", "team.backend")).toBe("cotal.demo.chat.*.*.team.backend");
    expect(filters.dmInbox("demo", bob)).toBe("cotal.demo.inst.local.bob.>");
    expect(filters.anycast("demo", "reviewer")).toBe("cotal.demo.svc.reviewer.>");
  });
});

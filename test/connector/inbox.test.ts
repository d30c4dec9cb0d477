import { describe, expect, it } from "vitest";
import { Inbox, seatClassifier, type Classifier } from "../../connector/internal.js";
import { principal } from "../../schemas/index.js";
import { fakeMail, type FakeMail } from "./helpers.js";

/** The seat's own classifier for local.bob, with `muted` channels muted (every other one normal). */
function classifier(muted: Set<string> = new Set()): Classifier {
  return seatClassifier(principal("local", "bob"), (ch) => (muted.has(ch) ? "muted" : "normal"));
}

const ids = (inbox: Inbox) => inbox.entries().map((e) => e.id);

describe("the seat's classifier", () => {
  it("directed: DMs, anycasts and posts that mention the seat by actor or principal id, in any case", () => {
    const c = classifier();
    expect(c(fakeMail("dm", "x"))).toEqual({ cls: "directed", mentionsYou: false });
    expect(c(fakeMail("anycast", "x"))).toEqual({ cls: "directed", mentionsYou: false });
    for (const m of ["bob", "BOB", "local.bob", "Local.Bob"])
      expect(c(fakeMail("channel", "x", { mentions: [m] })), m).toEqual({ cls: "directed", mentionsYou: true });
    expect(c(fakeMail("channel", "x", { mentions: ["team.bob", "alice"] }))).toEqual({ cls: "channel", mentionsYou: false });
  });

  it("pull-only: history and muted channels, even when they mention the seat", () => {
    const c = classifier(new Set(["noise"]));
    expect(c(fakeMail("channel", "x", { source: "history", mentions: ["bob"] }))).toEqual({ cls: "pull", mentionsYou: true });
    expect(c(fakeMail("channel", "x", { channel: "noise", mentions: ["bob"] }))).toEqual({ cls: "pull", mentionsYou: true });
    expect(c(fakeMail("channel", "x"))).toEqual({ cls: "channel", mentionsYou: false });
  });
});

describe("bounded inbox", () => {
  it("orders directed mail first, then channel traffic, then pull-only, arrival order within", () => {
    const inbox = new Inbox(classifier(new Set(["noise"])));
    inbox.add(fakeMail("channel", "c1", { id: "c1" }));
    inbox.add(fakeMail("channel", "n1", { id: "n1", channel: "noise" }));
    inbox.add(fakeMail("dm", "d1", { id: "d1" }));
    inbox.add(fakeMail("channel", "h1", { id: "h1", source: "history" }));
    inbox.add(fakeMail("anycast", "a1", { id: "a1" }));
    inbox.add(fakeMail("channel", "m1", { id: "m1", mentions: ["bob"] }));
    expect(ids(inbox)).toEqual(["d1", "a1", "m1", "c1", "n1", "h1"]);
  });

  it("on overflow evicts pull-only first, then the oldest channel traffic, acking what it evicts", () => {
    const inbox = new Inbox(classifier(new Set(["noise"])), { capacity: 3 });
    const pull = fakeMail("channel", "p", { id: "p", channel: "noise" });
    const c1 = fakeMail("channel", "c1", { id: "c1" });
    const c2 = fakeMail("channel", "c2", { id: "c2" });
    inbox.add(pull);
    inbox.add(c1);
    inbox.add(c2);
    const r1 = inbox.add(fakeMail("dm", "d1", { id: "d1" }));
    expect(r1.evicted.map((e) => [e.entry.id, e.action])).toEqual([["p", "acked"]]);
    expect(pull.acked).toBe(1);
    const r2 = inbox.add(fakeMail("dm", "d2", { id: "d2" }));
    expect(r2.evicted.map((e) => [e.entry.id, e.action])).toEqual([["c1", "acked"]]);
    expect(c1.acked).toBe(1);
    expect(ids(inbox)).toEqual(["d1", "d2", "c2"]);
  });

  it("evicts directed mail only when the inbox is all directed, and never acks it (the broker redelivers it)", () => {
    const inbox = new Inbox(classifier(), { capacity: 2, nakDelayMs: 1234 });
    const d1 = fakeMail("dm", "d1", { id: "d1" });
    const d2 = fakeMail("dm", "d2", { id: "d2" });
    const d3 = fakeMail("dm", "d3", { id: "d3" });
    inbox.add(d1);
    inbox.add(d2);
    const r = inbox.add(d3);
    // The newest directed entry goes (here the arriving one): older mail keeps its place.
    expect(r.entry).toBeUndefined();
    expect(r.evicted.map((e) => [e.entry.id, e.action])).toEqual([["d3", "returned"]]);
    expect(d3.acked).toBe(0);
    expect(d3.naks).toEqual([1234]);
    expect(inbox.returnedCount).toBe(1);
    // A channel post arriving at a full all-directed inbox is the one evicted.
    const c = fakeMail("channel", "c", { id: "c" });
    expect(inbox.add(c).evicted.map((e) => e.entry.id)).toEqual(["c"]);
    expect(c.acked).toBe(1);
  });

  it("never evicts a message that is being handed over", () => {
    const inbox = new Inbox(classifier(), { capacity: 2 });
    const c1 = fakeMail("channel", "c1", { id: "c1" });
    const c2 = fakeMail("channel", "c2", { id: "c2" });
    inbox.add(c1);
    inbox.add(c2);
    const sel = inbox.drain(10_000);
    expect(sel.handover?.entries.map((e) => e.id)).toEqual(["c1", "c2"]);
    const r = inbox.add(fakeMail("channel", "c3", { id: "c3" }));
    // c1 and c2 are pinned: the arriving post is the only candidate.
    expect(r.evicted.map((e) => e.entry.id)).toEqual(["c3"]);
    expect(c1.acked + c2.acked).toBe(0);
  });

  it("a redelivered evicted DM comes back without a possible-repeat flag (it was never shown)", () => {
    const inbox = new Inbox(classifier(), { capacity: 1 });
    inbox.add(fakeMail("dm", "d1", { id: "d1" }));
    inbox.add(fakeMail("dm", "d2", { id: "d2" }));
    expect(inbox.returnedCount).toBe(1);
    const h = inbox.drain(10_000).handover!;
    return inbox.confirm(h.id).then(() => {
      const back = inbox.add(fakeMail("dm", "d2", { id: "d2", possibleRepeat: true }));
      expect(back.entry?.possibleRepeat).toBe(false);
      expect(inbox.returnedCount).toBe(0);
    });
  });

  it("joins a second delivery of the same id to the held one and settles both together", async () => {
    const inbox = new Inbox(classifier());
    const a = fakeMail("dm", "x", { id: "same" });
    const b = fakeMail("dm", "x", { id: "same" });
    inbox.add(a);
    expect(inbox.add(b).entry).toBeUndefined();
    expect(inbox.size).toBe(1);
    const h = inbox.drain(10_000).handover!;
    expect(await inbox.confirm(h.id)).toBe(1);
    expect([a.acked, b.acked]).toEqual([1, 1]);
  });

  it("drain takes whole messages within the budget, never pull-only ones, and stops at the first that does not fit", async () => {
    const inbox = new Inbox(classifier(new Set(["noise"])));
    const d1 = fakeMail("dm", "x".repeat(100), { id: "d1" });
    const d2 = fakeMail("dm", "y".repeat(500), { id: "d2" });
    const d3 = fakeMail("dm", "z".repeat(10), { id: "d3" });
    const huge = fakeMail("dm", "h".repeat(5_000), { id: "huge" });
    inbox.add(huge);
    inbox.add(d1);
    inbox.add(d2);
    inbox.add(d3);
    inbox.add(fakeMail("channel", "muted", { id: "p", channel: "noise" }));
    const sel = inbox.drain(700);
    // huge can never fit (skipped, counted); d1 fits; d2 does not fit what is left: stop there.
    expect(sel.handover?.entries.map((e) => e.id)).toEqual(["d1"]);
    expect(sel.text.join("\n").length).toBeLessThanOrEqual(700);
    expect(sel.tooLarge).toBe(1);
    expect(sel.waiting).toBe(3);
    expect(sel.pullOnly).toBe(1);
    await inbox.confirm(sel.handover!.id);
    expect(d1.acked).toBe(1);
    expect(ids(inbox)).toEqual(["huge", "d2", "d3", "p"]);
  });

  it("a released hand-over keeps its mail, flagged as a possible repeat, and acks nothing", () => {
    const inbox = new Inbox(classifier());
    const d = fakeMail("dm", "hello", { id: "d" });
    inbox.add(d);
    const sel = inbox.drain(10_000);
    expect(sel.text[0]).not.toContain("possible repeat");
    inbox.release(sel.handover!.id);
    expect(d.acked).toBe(0);
    const again = inbox.drain(10_000);
    expect(again.handover?.entries.map((e) => e.id)).toEqual(["d"]);
    expect(again.text[0]).toContain("possible repeat");
  });

  it("window returns every class in order, clears only what it returned, and counts what waits", async () => {
    const inbox = new Inbox(classifier(new Set(["noise"])));
    for (let i = 0; i < 5; i++) inbox.add(fakeMail("dm", `d${i}`, { id: `d${i}` }));
    inbox.add(fakeMail("channel", "p", { id: "p", channel: "noise" }));
    const sel = inbox.window(100_000, 3);
    expect(sel.handover?.entries.map((e) => e.id)).toEqual(["d0", "d1", "d2"]);
    expect(sel.waiting).toBe(2);
    expect(sel.pullOnly).toBe(1);
    await inbox.confirm(sel.handover!.id);
    const rest = inbox.window(100_000, 50);
    expect(rest.handover?.entries.map((e) => e.id)).toEqual(["d3", "d4", "p"]);
  });

  it("returns a message too large for one reply in parts and clears it only after its last part", async () => {
    const inbox = new Inbox(classifier());
    const big = fakeMail("dm", "L".repeat(25_000), { id: "big" });
    inbox.add(big);
    inbox.add(fakeMail("dm", "small", { id: "small" }));
    const seen: string[] = [];
    for (let i = 1; i <= 10; i++) {
      const sel = inbox.window(10_000, 50);
      const h = sel.handover!;
      if (!h.part) break;
      expect(h.entries.map((e) => e.id)).toEqual(["big"]);
      seen.push(sel.text[0]!.split("\n")[0]!);
      expect(inbox.drain(100_000).handover?.entries.map((e) => e.id)).toEqual(["small"]); // a hook may take other mail meanwhile…
      inbox.release(inbox.entries().find((e) => e.id === "small")!.handover!); // …(released again here)
      await inbox.confirm(h.id);
      expect(big.acked).toBe(h.part.index === h.part.total ? 1 : 0);
    }
    expect(seen).toEqual(["1/3", "2/3", "3/3"].map((p) => expect.stringContaining(`part ${p}`)));
    expect(ids(inbox)).toEqual(["small"]);
  });

  it("keeps held durable mail alive and returns everything to the broker on shutdown", () => {
    const inbox = new Inbox(classifier());
    const d = fakeMail("dm", "d");
    const live = fakeMail("channel", "c", { source: "live" });
    inbox.add(d);
    inbox.add(live);
    expect(inbox.keepAlive()).toBe(1);
    expect(d.workings).toBe(1);
    expect(live.workings).toBe(0);
    expect(inbox.returnAll()).toBe(1);
    expect(d.naks).toEqual([0]);
    expect(inbox.size).toBe(0);
  });

  it("bounds the total framed size as well as the count", () => {
    const inbox = new Inbox(classifier(), { maxChars: 3_000 });
    const posts: FakeMail[] = [];
    for (let i = 0; i < 5; i++) {
      const p = fakeMail("channel", "x".repeat(900), { id: `c${i}` });
      posts.push(p);
      inbox.add(p);
    }
    expect(inbox.size).toBeLessThan(5);
    expect(posts.slice(0, 5 - inbox.size).every((p) => p.acked === 1)).toBe(true);
  });
});

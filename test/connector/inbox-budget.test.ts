// The inbox's character budgets, at their exact edges: the framed-size bound of what it holds
// (maxChars), and the reply budgets of drain (hooks) and window (cotal_inbox). Mutation testing
// found the held-characters budget never exercised beyond "fewer than five are left".
import { describe, expect, it } from "vitest";
import { frameInput, frameMessage, Inbox, type Classifier, type InboxEntry } from "../../connector/internal.js";
import { fakeMail, type FakeMail } from "./helpers.js";

const classify: Classifier = (m) => ({ cls: m.kind === "channel" ? "channel" : "directed", mentionsYou: false });

/** Posts of equal framed size: ids of equal length, the same text. */
function posts(n: number, text = "x".repeat(500), kind: "channel" | "dm" = "channel"): FakeMail[] {
  return Array.from({ length: n }, (_, i) => fakeMail(kind, text, { id: `p${String(i).padStart(2, "0")}` }));
}

/** The framed size of one of `posts()`: what the inbox counts against maxChars. */
function charsOf(m: FakeMail): number {
  return frameMessage(frameInput({ mail: m, mentionsYou: false, possibleRepeat: false })).length;
}

const ids = (es: Array<{ entry: InboxEntry }>) => es.map((e) => e.entry.id);

describe("the inbox's held-characters budget", () => {
  it("holds messages up to exactly maxChars, and one more evicts exactly the oldest post", () => {
    const ps = posts(4);
    const size = charsOf(ps[0]!);
    const inbox = new Inbox(classify, { maxChars: 3 * size });
    for (const p of ps.slice(0, 3)) {
      const r = inbox.add(p);
      expect(r.entry?.chars).toBe(size);
      expect(r.evicted).toEqual([]);
    }
    expect(inbox.size).toBe(3);
    const r = inbox.add(ps[3]!);
    expect(ids(r.evicted)).toEqual(["p00"]);
    expect(r.evicted[0]!.action).toBe("acked");
    expect(ps[0]!.acked).toBe(1);
    expect(inbox.entries().map((e) => e.id)).toEqual(["p01", "p02", "p03"]);
  });

  it("a message bigger than the whole budget is never held (older posts go first, oldest first)", () => {
    const size = charsOf(posts(1)[0]!);
    const inbox = new Inbox(classify, { maxChars: 2 * size });
    inbox.add(posts(1)[0]!);
    const huge = fakeMail("channel", "h".repeat(10 * size), { id: "huge" });
    const r = inbox.add(huge);
    expect(r.entry).toBeUndefined();
    expect(ids(r.evicted)).toEqual(["p00", "huge"]);
    expect(inbox.size).toBe(0);
    expect(huge.acked).toBe(1);
  });

  it("confirmed mail gives its characters back", async () => {
    const ps = posts(6);
    const inbox = new Inbox(classify, { maxChars: 3 * charsOf(ps[0]!) });
    for (const p of ps.slice(0, 3)) inbox.add(p);
    const h = inbox.window(1_000_000, 2).handover!;
    expect(await inbox.confirm(h.id)).toBe(2);
    expect(inbox.add(ps[3]!).evicted).toEqual([]);
    expect(inbox.add(ps[4]!).evicted).toEqual([]);
    expect(ids(inbox.add(ps[5]!).evicted)).toEqual(["p02"]);
  });

  it("evicted mail gives its characters back", () => {
    const ps = posts(5);
    const inbox = new Inbox(classify, { maxChars: 2 * charsOf(ps[0]!) });
    inbox.add(ps[0]!);
    inbox.add(ps[1]!);
    expect(ids(inbox.add(ps[2]!).evicted)).toEqual(["p00"]);
    expect(ids(inbox.add(ps[3]!).evicted)).toEqual(["p01"]);
    expect(ids(inbox.add(ps[4]!).evicted)).toEqual(["p02"]);
    expect(inbox.size).toBe(2);
  });

  it("a duplicate delivery of a held id costs nothing", () => {
    const ps = posts(3);
    const inbox = new Inbox(classify, { maxChars: 3 * charsOf(ps[0]!) });
    for (const p of ps) inbox.add(p);
    const again = fakeMail("channel", "x".repeat(500), { id: "p00" });
    expect(inbox.add(again)).toEqual({ evicted: [] });
    expect(inbox.size).toBe(3);
  });

  it("returning everything to the broker empties the budget", () => {
    const ps = posts(3);
    const inbox = new Inbox(classify, { maxChars: 2 * charsOf(ps[0]!) });
    inbox.add(ps[0]!);
    inbox.add(ps[1]!);
    inbox.returnAll();
    expect(inbox.add(ps[2]!).evicted).toEqual([]);
    expect(inbox.add(fakeMail("channel", "x".repeat(500), { id: "p03" })).evicted).toEqual([]);
  });

  it("mail being handed over is never evicted for size, even over budget; it waits until the hand-over settles", async () => {
    const ps = posts(3);
    const inbox = new Inbox(classify, { maxChars: 2 * charsOf(ps[0]!) });
    inbox.add(ps[0]!);
    inbox.add(ps[1]!);
    const h = inbox.drain(1_000_000).handover!;
    const r = inbox.add(ps[2]!);
    expect(ids(r.evicted)).toEqual(["p02"]); // the only free entry
    expect(ps[0]!.acked + ps[1]!.acked).toBe(0);
    inbox.release(h.id);
    expect(inbox.size).toBe(2);
  });

  it("over budget with only directed mail: the newest goes back to the broker, unacked", () => {
    const ds = posts(3, "y".repeat(300), "dm");
    const inbox = new Inbox(classify, { maxChars: 2 * charsOf(ds[0]!), nakDelayMs: 777 });
    inbox.add(ds[0]!);
    inbox.add(ds[1]!);
    const r = inbox.add(ds[2]!);
    expect(r.evicted.map((e) => [e.entry.id, e.action])).toEqual([["p02", "returned"]]);
    expect(ds[2]!.naks).toEqual([777]);
    expect(ds[2]!.acked).toBe(0);
  });

  it("defaults: 200 messages, 4,000,000 characters, a 5 s redelivery delay", () => {
    const inbox = new Inbox(classify);
    expect([inbox.capacity, inbox.maxChars, inbox.nakDelayMs]).toEqual([200, 4_000_000, 5_000]);
  });
});

describe("reply budgets", () => {
  it("drain: a message whose framed text plus newline is exactly the budget fits; one character less and it is too large", () => {
    const [p] = posts(1, "d".repeat(200), "dm");
    const need = charsOf(p!) + 1;
    const inbox = new Inbox(classify);
    inbox.add(p!);
    const tight = inbox.drain(need - 1);
    expect(tight.handover).toBeUndefined();
    expect(tight.tooLarge).toBe(1);
    expect(tight.text).toEqual([]);
    const exact = inbox.drain(need);
    expect(exact.handover?.entries.map((e) => e.id)).toEqual(["p00"]);
    expect(exact.tooLarge).toBe(0);
    expect(exact.waiting).toBe(0);
  });

  it("drain: the second message fits only if both framed texts and their newlines fit", () => {
    const ps = posts(2, "d".repeat(200), "dm");
    const need = charsOf(ps[0]!) + 1;
    const a = new Inbox(classify);
    ps.forEach((p) => a.add(p));
    expect(a.drain(2 * need - 1).handover?.entries.map((e) => e.id)).toEqual(["p00"]);
    const b = new Inbox(classify);
    posts(2, "d".repeat(200), "dm").forEach((p) => b.add(p));
    expect(b.drain(2 * need).handover?.entries.map((e) => e.id)).toEqual(["p00", "p01"]);
  });

  it("window: exactly the budget comes whole, one character less comes in parts", () => {
    const [p] = posts(1, "w".repeat(400), "dm");
    const need = charsOf(p!) + 1;
    const whole = new Inbox(classify);
    whole.add(p!);
    const sel = whole.window(need, 10);
    expect(sel.handover?.part).toBeUndefined();
    expect(sel.text).toEqual([frameMessage(frameInput({ mail: p!, mentionsYou: false, possibleRepeat: false }))]);
    const split = new Inbox(classify);
    split.add(posts(1, "w".repeat(400), "dm")[0]!);
    expect(split.window(need - 1, 10).handover?.part).toMatchObject({ index: 1 });
  });

  it("window: stops at the message that would overflow the budget, and at maxMessages", () => {
    const ps = posts(3, "w".repeat(100), "dm");
    const need = charsOf(ps[0]!) + 1;
    const inbox = new Inbox(classify);
    ps.forEach((p) => inbox.add(p));
    const two = inbox.window(2 * need, 10);
    expect(two.handover?.entries.map((e) => e.id)).toEqual(["p00", "p01"]);
    expect(two.waiting).toBe(1);
    inbox.release(two.handover!.id);
    expect(inbox.window(3 * need, 1).handover?.entries.map((e) => e.id)).toEqual(["p00"]);
  });
});

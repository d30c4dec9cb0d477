// History is served page by page: every stored post exactly once, oldest first, each page
// within its byte bound measured in encoded UTF-8 bytes (not string length).
import { afterEach, describe } from "vitest";
import { callControl, ControlCallError, HISTORY_PAGE_BYTES, type Endpoint, type HistoryPage } from "../../broker/internal.js";
import { messageText, type HistoryArgs } from "../../schemas/index.js";
import { expect, test } from "../harness/fixtures.js";
import { TestMesh } from "../harness/mesh.js";

let mesh: TestMesh | undefined;
afterEach(async () => {
  await mesh?.close();
  mesh = undefined;
});

const utf8 = (v: unknown) => Buffer.byteLength(JSON.stringify(v), "utf8");

function history(ep: Endpoint, args: HistoryArgs): Promise<HistoryPage> {
  return callControl(ep.nc, ep.space, "history", ep.me, args);
}

describe("history pages", () => {
  test("pages walk the whole channel exactly once, oldest first, each within the page byte bound", async ({ nats }) => {
    mesh = await TestMesh.start(nats, "pages");
    const alice = await mesh.joined("alice");
    const bob = await mesh.joined("bob");
    const carol = await mesh.joined("carol");
    // 3-byte characters: a page bounded by string length would be three times too big.
    const big = (i: number) => `${i}:` + "€".repeat(55_000 + i * 100);
    const sent: Array<{ seq: number; text: string }> = [];
    for (let i = 0; i < 24; i++) {
      const text = i % 3 === 2 ? `small ${i}` : big(i);
      const r = await (i % 2 ? bob : alice).send("general", text);
      sent.push({ seq: r.seq, text });
      if (i % 5 === 0) await alice.send("notes", `elsewhere ${i}`); // another channel: never in general's pages
    }

    const seen: Array<{ seq: number; text: string }> = [];
    const pages: HistoryPage[] = [];
    let page = await history(carol, { channel: "general" });
    for (;;) {
      pages.push(page);
      expect(utf8(page)).toBeLessThanOrEqual(HISTORY_PAGE_BYTES);
      seen.push(...page.items.map((h) => ({ seq: h.seq, text: messageText(h.message) })));
      if (!page.more) break;
      expect(page.nextAfterSeq).toBeGreaterThan(page.items.at(-1)?.seq ?? 0);
      page = await history(carol, { channel: "general", afterSeq: page.nextAfterSeq });
    }
    expect(seen).toEqual(sent);
    // 16 posts of ~170 KB (but only ~57 K characters each): four to a page, measured in bytes.
    expect(pages.length).toBeGreaterThanOrEqual(4);
    expect(JSON.stringify(pages[0]).length * 2).toBeLessThan(HISTORY_PAGE_BYTES); // by string length it would have taken twice as many
    expect(pages.every((p) => p.items.length > 0)).toBe(true);
  });

  test("limit N is the newest N, within afterSeq/beforeSeq; sinceMs must be a valid time", async ({ nats }) => {
    mesh = await TestMesh.start(nats, "limits");
    const alice = await mesh.joined("alice");
    const bob = await mesh.joined("bob");
    const seqs: number[] = [];
    for (let i = 0; i < 30; i++) {
      seqs.push((await (i % 2 ? bob : alice).send("general", `post ${i}`)).seq);
      if (i % 4 === 0) await bob.send("notes", `noise ${i}`);
    }
    const seqsOf = (p: HistoryPage) => p.items.map((h) => h.seq);

    expect(seqsOf(await history(bob, { channel: "general", limit: 1 }))).toEqual(seqs.slice(-1));
    expect(seqsOf(await history(bob, { channel: "general", limit: 7 }))).toEqual(seqs.slice(-7));
    expect(seqsOf(await history(bob, { channel: "general", limit: 100 }))).toEqual(seqs);
    expect(seqsOf(await history(bob, { channel: "general", limit: 4, beforeSeq: seqs[20] }))).toEqual(seqs.slice(16, 20));
    expect(seqsOf(await history(bob, { channel: "general", limit: 50, afterSeq: seqs[25] }))).toEqual(seqs.slice(25));
    expect(seqsOf(await history(bob, { channel: "general", afterSeq: seqs[10], beforeSeq: seqs[13] }))).toEqual(seqs.slice(10, 13));
    expect(seqsOf(await history(bob, { channel: "general", sinceMs: Date.now() + 60_000 }))).toEqual([]);
    expect(seqsOf(await history(bob, { channel: "general", sinceMs: 0, limit: 3 }))).toEqual(seqs.slice(-3));
    expect(await history(bob, { channel: "empty" })).toEqual({ items: [], more: false });
    // The endpoint's own reader agrees.
    expect((await bob.history("general", { limit: 5 })).map((h) => h.seq)).toEqual(seqs.slice(-5));

    for (const sinceMs of [9e15, -1, 1.5]) {
      const err = await history(bob, { channel: "general", sinceMs }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ControlCallError);
      expect((err as ControlCallError).code).toBe("invalid-args");
    }
  });
});

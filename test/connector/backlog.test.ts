// The join-backlog latch a session's first drain waits on: it opens on counts (durable mail that
// arrived, nothing left queued), and on its deadline when the mail cannot arrive in time.
import { describe, expect, it } from "vitest";
import { BacklogLatch } from "../../connector/internal.js";

/** Whether the latch opened, read without waiting. */
async function opened(latch: BacklogLatch): Promise<boolean> {
  return Promise.race([latch.ready.then(() => true), Promise.resolve().then(() => false)]);
}

describe("the join-backlog latch", () => {
  it("opens once as many durable deliveries arrived as the broker held, and none is left queued", async () => {
    let queued = 1;
    const latch = new BacklogLatch(() => queued);
    latch.delivered("durable"); // arrived before the backlog was known
    latch.expect(3, 60_000);
    latch.delivered("history"); // backfill is not part of the durable backlog
    latch.delivered("live");
    latch.delivered("durable");
    expect(await opened(latch)).toBe(false);
    latch.delivered("durable");
    expect(await opened(latch), "one delivery still queued in the client").toBe(false);
    queued = 0;
    latch.delivered("history");
    expect(await opened(latch)).toBe(true);
  });

  it("opens at once when the broker held nothing", async () => {
    const latch = new BacklogLatch(() => 0);
    latch.expect(0, 60_000);
    expect(await opened(latch)).toBe(true);
  });

  it("opens at its deadline when the held mail does not arrive (a crashed predecessor's, until the ack wait)", async () => {
    const latch = new BacklogLatch(() => 0);
    latch.expect(1, 50);
    expect(await opened(latch)).toBe(false);
    await latch.ready; // resolves: the deadline opened it
  });
});

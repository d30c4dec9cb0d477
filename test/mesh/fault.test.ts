import { randomUUID } from "node:crypto";
import { afterEach, describe } from "vitest";
import { expect, test, until } from "../harness/fixtures.js";
import { TestMesh } from "../harness/mesh.js";

let mesh: TestMesh | undefined;
afterEach(async () => {
  await mesh?.close();
  mesh = undefined;
});

describe("broker crash", () => {
  test("2,000 DMs in flight survive a SIGKILL of nats-server and a restart on the same store", async ({ nats }) => {
    mesh = await TestMesh.start(nats, "fault", { ackWaitMs: 2_000 });
    const bob = await mesh.joined("bob");
    const alice = await mesh.joined("alice");
    const total = 2_000;
    const ids = Array.from({ length: total }, () => randomUUID());

    const received = new Map<string, number>();
    const unflaggedRepeats: string[] = [];
    void (async () => {
      for await (const d of bob.deliveries) {
        const seen = received.get(d.message.id) ?? 0;
        received.set(d.message.id, seen + 1);
        if (seen > 0 && !d.possibleRepeat) unflaggedRepeats.push(d.message.id);
        await d.ack().catch(() => undefined); // an ack lost in the crash means a redelivery, not a loss
      }
    })();

    let sent = 0;
    const sender = (async () => {
      const lanes = 16;
      await Promise.all(
        Array.from({ length: lanes }, async (_, lane) => {
          for (let i = lane; i < total; i += lanes) {
            await alice.dm("bob", `dm ${i}`, { id: ids[i] });
            sent += 1;
          }
        }),
      );
    })();

    await until(() => sent >= 400, 30_000, "400 DMs stored before the crash");
    const sentAtKill = sent;
    await nats.kill();
    await new Promise((r) => setTimeout(r, 500));
    await nats.restart();
    await sender;

    await until(() => ids.every((id) => received.has(id)), 60_000, "every DM received at least once after the restart");
    expect(sentAtKill).toBeLessThan(total); // the crash really happened mid-flight
    expect(received.size).toBe(total);
    // duplicates are possible; every second copy of an id is flagged as a possible repeat
    expect(unflaggedRepeats).toEqual([]);
  });
});

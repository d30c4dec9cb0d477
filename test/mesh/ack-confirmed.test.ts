// Delivery.ack() resolves only once the broker processed the ack (SPEC §5): the moment every ack
// of a batch resolved, the consumer holds none of them unacknowledged and the work-queue inbox
// has dropped them, with no wait in between. Both auth modes (the confirmation crosses an
// account import in static mode). Real nats-server.
import { afterEach, describe } from "vitest";
import type { Delivery } from "../../broker/index.js";
import { names } from "../../schemas/index.js";
import { expect, test, until } from "../harness/fixtures.js";
import { TestMesh } from "../harness/mesh.js";

const N = 40;

let mesh: TestMesh | undefined;
afterEach(async () => {
  await mesh?.close();
  mesh = undefined;
});

describe("a confirmed ack", () => {
  test(`${N} DMs acked at once: when every ack resolved, the broker holds none of them`, async ({ nats }) => {
    mesh = await TestMesh.start(nats, "ackok");
    const alice = await mesh.joined("alice");
    const bob = await mesh.joined("bob");
    for (let i = 0; i < N; i++) await alice.dm("bob", `m${i}`);
    const held: Delivery[] = [];
    for await (const d of bob.deliveries) if (held.push(d) === N) break;
    const jsm = await mesh.dataJsm();
    const stream = names.dmStream("ackok");
    await until(async () => (await jsm.consumers.info(stream, "dm_local-bob")).num_ack_pending === N, 10_000, `bob's inbox to hold ${N} unacked`);

    // One tick: the batcher sends N-1 plain acks and confirms the last; all resolve with it.
    await Promise.all(held.map((d) => d.ack()));
    const info = await jsm.consumers.info(stream, "dm_local-bob");
    expect(info.num_ack_pending).toBe(0);
    expect((await jsm.streams.info(stream)).state.messages).toBe(0);
  });
});

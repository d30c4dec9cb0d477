// An ack the broker does not confirm (the consumer's ack subject has no responders: in a cluster,
// while a new leader is elected for it) fails at once, and the message is not lost, not delivered
// twice and not stuck: the copy the broker hands out again is acked. Made
// deterministic on one server by stopping the mesh service and deleting the inbox consumer, so
// nothing answers the ack until the service is back and the endpoint has re-created it.
import { afterEach, describe } from "vitest";
import { AckUnconfirmedError, type Delivery, type Endpoint } from "../../broker/index.js";
import { messageText, names } from "../../schemas/index.js";
import { expect, test, until } from "../harness/fixtures.js";
import { TestMesh } from "../harness/mesh.js";
import type { NatsServer } from "../../testbed/nats-server.js";

let mesh: TestMesh | undefined;
afterEach(async () => {
  await mesh?.close();
  mesh = undefined;
});

/** The next delivery, or undefined when none comes within `ms`. */
async function nextWithin(ep: Endpoint, ms: number): Promise<Delivery | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const none = new Promise<undefined>((r) => (timer = setTimeout(() => r(undefined), ms)));
  const got = await Promise.race([ep.deliveries.next().then((r) => (r.done ? undefined : r.value)), none]);
  clearTimeout(timer);
  return got;
}

/** bob holds alice's DM "one"; then the mesh service stops and bob's inbox consumer is deleted. */
async function ackWithNoResponders(nats: NatsServer, space: string) {
  mesh = await TestMesh.start(nats, space, { ackWaitMs: 1_000 });
  const alice = await mesh.joined("alice");
  const bob = await mesh.joined("bob");
  await alice.dm("bob", "one");
  const one = await nextWithin(bob, 5_000);
  expect(one && messageText(one.message)).toBe("one");
  await mesh.service.stop();
  const jsm = await mesh.dataJsm();
  expect(await jsm.consumers.delete(names.dmStream(space), "dm_local-bob")).toBe(true);
  const restart = () => mesh!.startService({ ackWaitMs: 1_000 });
  return { alice, bob, one: one!, jsm, restart };
}

describe("an ack the broker does not confirm", () => {
  test("rejects, and the redelivered copy is acked, not delivered twice or left unacked", async ({ nats }) => {
    const { alice, bob, one, jsm, restart } = await ackWithNoResponders(nats, "acklost");
    const err: unknown = await one.ack().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(AckUnconfirmedError);
    expect((err as AckUnconfirmedError).code).toBe("ack-unconfirmed");
    // Open: the server says no responders at once; static: the ack crosses an account import, so it times out.
    expect(String((err as Error).cause)).toMatch(/no responders|timeout/i);

    await restart(); // the re-created consumer hands "one" out again
    await until(async () => (await jsm.streams.info(names.dmStream("acklost"))).state.messages === 0, 10_000, "the broker forgot the DM");
    const info = await jsm.consumers.info(names.dmStream("acklost"), "dm_local-bob");
    expect(info.num_ack_pending).toBe(0);
    expect(info.delivered.stream_seq, "the copy was handed out again").toBeGreaterThanOrEqual(1);

    await alice.dm("bob", "two");
    const next = await nextWithin(bob, 5_000);
    expect(next && messageText(next.message), "the next thing bob sees is the new DM, not a second 'one'").toBe("two");
    await next!.ack();
  }, 30_000);
});

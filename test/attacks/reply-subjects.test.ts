import { jetstream } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { Endpoint, MintRequest } from "../../broker/index.js";
import { callControl, jetStreamConnection, JS_OPTIONS } from "../../broker/index.js";
import { controlSubject, dmSubject, durables, encodeMessage, localPrincipal, names, type Principal } from "../../schemas/index.js";
import { TestMesh } from "../harness/mesh.js";
import { expectUnchanged, revokeStillCuts, snapshot } from "./state.js";

/**
 * NATS does not permission-check reply subjects (docs/security.md, Account isolation). Each test aims the broker's or
 * the mesh service's answer at a target an attacker must not reach, by every route a minted
 * credential has, and asserts the mesh is unchanged: streams, per-subject counts, consumers and
 * identity records; and that revoking the attacker afterwards still cuts it.
 */
const SPACE = "atk";
const API = "$JS.API";
let mesh: TestMesh;
let alice: Endpoint;
let bob: Endpoint;
let n = 0;

beforeAll(async () => {
  mesh = await TestMesh.startStatic(SPACE);
  const scope = { allowSubscribe: ["general"], allowPublish: ["general"] };
  alice = await mesh.endpoint("alice", { creds: await mesh.mint({ name: "alice", profile: "agent", ...scope }) });
  bob = await mesh.endpoint("bob", { creds: await mesh.mint({ name: "bob", profile: "agent", ...scope, role: "reviewer" }), role: "reviewer" });
  await alice.join();
  await bob.join();
  for (let i = 0; i < 3; i++) await bob.send("general", `bob's real post ${i}`);
  await alice.anycast("reviewer", "a task that must stay queued");
});

afterAll(async () => {
  await mesh?.close();
});

/** The kinds of credential `cotal mint` hands out to people and programs. */
const PROFILES: Record<string, (name: string) => MintRequest> = {
  agent: (name) => ({ name, profile: "agent", allowSubscribe: ["general"], allowPublish: ["general"], provision: true }),
  observer: (name) => ({ name, profile: "observer" }),
  person: (name) => ({ name, profile: "person", provision: true }),
  "scoped reader": (name) => ({ name, profile: "agent", allowSubscribe: ["events.local.alice"], provision: true }),
};

/** Where an answer must never act: JetStream's API, other identities' subjects, records. */
function targets(me: Principal): string[] {
  return [
    `$JS.API.STREAM.DELETE.${names.seatsStream(SPACE)}`,
    `$JS.API.STREAM.PURGE.${names.dmStream(SPACE)}`,
    `$JS.API.STREAM.PURGE.${names.chatStream(SPACE)}`,
    `$JS.API.CONSUMER.DELETE.${names.taskStream(SPACE)}.${durables.anycast("reviewer")}`,
    `$JS.API.CONSUMER.DELETE.${names.dmStream(SPACE)}.${durables.dm(localPrincipal("bob"))}`,
    `$JS.API.CONSUMER.MSG.NEXT.${names.dmStream(SPACE)}.${durables.dm(localPrincipal("bob"))}`,
    // Imported read-only API (an answer landing there must not re-cross, nor crash the server).
    `${API}.STREAM.MSG.GET.KV_${names.membersBucket(SPACE)}`,
    `${API}.STREAM.INFO.${names.dmStream(SPACE)}`,
    `$JS.ACK.${names.dmStream(SPACE)}.${durables.dm(localPrincipal("bob"))}.1.1.1.1.0`,
    `cotal.${SPACE}.chat.local.bob.general`,
    `cotal.${SPACE}.inst.local.bob.local.alice`,
    `$KV.${names.membersBucket(SPACE)}.id.${me.owner}.${me.actor}`,
    `$KV.${names.presenceBucket(SPACE)}.local.bob`,
  ];
}

async function attacker(profile: string): Promise<{ who: Principal; nc: NatsConnection; creds: string }> {
  const name = `mallory${n++}`;
  const creds = await mesh.mint(PROFILES[profile]!(name));
  const who = localPrincipal(name);
  return { who, creds, nc: await mesh.connection(creds, `_INBOX.local.${name}`) };
}

const pull = JSON.stringify({ batch: 1, no_wait: true });
const withDurable = ["agent", "scoped reader"] as const;

describe.each(withDurable)("%s: a pull on its own durable", (profile) => {
  test("with the reply aimed anywhere else changes nothing", async () => {
    const { who, nc, creds } = await attacker(profile);
    const dm = names.dmStream(SPACE);
    const durable = durables.dm(who);
    const consumer = await jetstream(jetStreamConnection(nc, creds), JS_OPTIONS).consumers.get(dm, durable);
    const own = dmSubject(SPACE, who, localPrincipal("alice"));
    for (const target of targets(who)) {
      await alice.dm(who.actor, `bait for ${target}`);
      const before = await snapshot(mesh);
      const info = () => mesh.dataJsm().then((j) => j.consumers.info(dm, durable));
      const pendingBefore = (await info()).num_ack_pending;
      nc.publish(`${API}.CONSUMER.MSG.NEXT.${dm}.${durable}`, pull, { reply: target });
      // A marker behind the bait, so the ordinary pull below never waits out its expiry.
      await alice.dm(who.actor, `marker for ${target}`);
      // Pulls on one durable are served in order, so after an ordinary pull the aimed one was
      // processed. Either JetStream ignored it (nobody listens at the target) and the ordinary
      // pull gets the bait (then the marker), or the bait went to a live listener of the target
      // in the clients account, unacked: the ordinary pull gets the marker, and the stream still
      // holds the bait for redelivery. Never did it act there.
      const text = (m: { data: Uint8Array } | null) => (m ? new TextDecoder().decode(m.data) : "");
      const m = await consumer.next({ expires: 5_000 });
      await m?.ackAck();
      if (text(m).includes(`bait for ${target}`)) {
        const marker = await consumer.next({ expires: 5_000 });
        expect(text(marker)).toContain(`marker for ${target}`);
        await marker!.ackAck();
      } else {
        expect(text(m)).toContain(`marker for ${target}`);
        expect((await info()).num_ack_pending).toBe(pendingBefore + 1);
      }
      await expectUnchanged(mesh, before, [own]);
    }
    await revokeStillCuts(mesh, who, nc);
  });
});

describe.each(withDurable)("%s: an ack of its own message", (profile) => {
  test("with the ack confirmation aimed anywhere else changes nothing", async () => {
    const { who, nc, creds } = await attacker(profile);
    const consumer = await jetstream(jetStreamConnection(nc, creds), JS_OPTIONS).consumers.get(names.dmStream(SPACE), durables.dm(who));
    for (const target of targets(who)) {
      await alice.dm(who.actor, `bait for ${target}`);
      const m = await consumer.next({ expires: 5_000 });
      expect(m, "the bait DM arrives on the attacker's own inbox").not.toBeNull();
      const own = dmSubject(SPACE, who, localPrincipal("alice"));
      const before = await snapshot(mesh);
      // The ack subject the broker handed out with the message (JsMsg implementations expose it).
      nc.publish((m as unknown as { reply: string }).reply, "+ACK", { reply: target });
      // Acks on one consumer are processed in order: once a later, confirmed ack is back, the
      // aimed one was processed too (it acked the bait, or the server dropped it).
      await alice.dm(who.actor, `proof for ${target}`);
      const proof = await consumer.next({ expires: 5_000 });
      expect(proof && new TextDecoder().decode(proof.data)).toContain(`proof for ${target}`);
      await proof!.ackAck();
      // Only the attacker's own DMs may have left the work queue.
      await expectUnchanged(mesh, before, [own]);
    }
    await revokeStillCuts(mesh, who, nc);
  });
});

describe.each(withDurable)("%s: a JetStream publish of its own DM", (profile) => {
  test("with the publish ack aimed anywhere else stores the DM and changes nothing else", async () => {
    const { who, nc } = await attacker(profile);
    // To a name nobody consumes, so the stored count is the attacker's alone.
    const subject = dmSubject(SPACE, localPrincipal("ghost"), who);
    const jsm = await mesh.dataJsm();
    const stored = async () => (await jsm.streams.info(names.dmStream(SPACE), { subjects_filter: subject })).state.subjects?.[subject] ?? 0;
    const body = () =>
      encodeMessage({
        id: `m-${n++}`,
        ts: Date.now(),
        space: SPACE,
        from: { id: `local.${who.actor}`, name: who.actor },
        to: "local.ghost",
        parts: [{ kind: "text", text: "hi" }],
      } as never);
    for (const target of targets(who)) {
      const before = await snapshot(mesh);
      const had = await stored();
      nc.publish(subject, body(), { reply: target });
      // Publishes to one stream are stored in order: once a later, acknowledged publish is back,
      // the aimed one was stored (or dropped by the server) first.
      await jetstream(nc).publish(subject, body());
      expect([had + 1, had + 2]).toContain(await stored());
      await expectUnchanged(mesh, before, [subject]);
    }
    await revokeStillCuts(mesh, who, nc);
  });
});

describe.each(Object.keys(PROFILES))("%s: a control call to the mesh service", (profile) => {
  test("with the reply aimed anywhere else changes nothing, and the service still answers it", async () => {
    const { who, nc } = await attacker(profile);
    const ping = controlSubject(SPACE, "mesh", "one", "ping", who);
    for (const target of targets(who)) {
      const before = await snapshot(mesh);
      const req = (id: string) => JSON.stringify({ id, deadline: Date.now() + 5_000, caller: `local.${who.actor}`, args: {} });
      nc.publish(ping, req(`aimed-${target}`), { reply: target });
      // The service answers calls in order: a later ping on the caller's own inbox comes back
      // only after the aimed one was answered.
      await callControl(nc, SPACE, "ping", who);
      await expectUnchanged(mesh, before);
    }
    await revokeStillCuts(mesh, who, nc);
  });

  test("a thousand answers aimed at bob's channel subject leave bob's posts in place", async () => {
    const { who, nc } = await attacker(profile);
    const before = await snapshot(mesh);
    const ping = controlSubject(SPACE, "mesh", "one", "ping", who);
    for (let i = 0; i < 1_000; i++) {
      nc.publish(ping, JSON.stringify({ id: `flood-${i}`, deadline: Date.now() + 30_000, caller: `local.${who.actor}`, args: {} }), {
        reply: `cotal.${SPACE}.chat.local.bob.general`,
      });
    }
    await callControl(nc, SPACE, "ping", who, {}, { timeoutMs: 30_000 });
    await expectUnchanged(mesh, before);
    await revokeStillCuts(mesh, who, nc);
  });
});

test("after answers aimed at its identity record, an agent's read scope and revocation still hold", async () => {
  const { who, nc } = await attacker("scoped reader");
  const record = `$KV.${names.membersBucket(SPACE)}.id.local.${who.actor}`;
  const ping = controlSubject(SPACE, "mesh", "one", "ping", who);
  const forged = JSON.stringify({ profile: "admin", allowSubscribe: [], allowPublish: [], users: [] });
  nc.publish(ping, forged, { reply: record });
  nc.publish(record, forged);
  await callControl(nc, SPACE, "ping", who);
  await expect(callControl(nc, SPACE, "history", who, { channel: "general" })).rejects.toThrow(/Not allowed to read channel general/);
  await revokeStillCuts(mesh, who, nc);
});

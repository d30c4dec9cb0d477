// What the mesh service creates for a member, exactly: the consumers' configuration, the
// membership records, idempotent re-joins, leaving, and argument checks on the control rail
// (mutation testing found mesh-service.ts mutants that no test noticed).
import { AckPolicy, DeliverPolicy, jetstream, type ConsumerInfo } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { afterEach, describe } from "vitest";
import { ACK_WAIT_MS, callControl, isConsumerNotFound, MAX_ACK_PENDING, requestControl, SERVICE_PRINCIPALS } from "../../broker/internal.js";
import { chatSubject, durables, encodeMessage, filters, localPrincipal, names, type Principal } from "../../schemas/index.js";
import { expect, test, until } from "../harness/fixtures.js";
import { TestMesh } from "../harness/mesh.js";
import { meshMode } from "../harness/mesh-mode.js";

const alice = localPrincipal("alice");
let mesh: TestMesh | undefined;
afterEach(async () => {
  await mesh?.close();
  mesh = undefined;
});

async function consumer(m: TestMesh, stream: string, durable: string): Promise<ConsumerInfo | undefined> {
  try {
    return await (await m.dataJsm()).consumers.info(stream, durable);
  } catch (err) {
    if (isConsumerNotFound(err)) return undefined;
    throw err;
  }
}

/** On a static mesh, alice needs a credential that may read general before the service lets her join it. */
async function mayJoin(m: TestMesh, p: Principal): Promise<void> {
  if (meshMode() === "static") await m.mint({ name: p.actor, profile: "agent", allowSubscribe: ["general"] });
}

/** Store a post on general straight into the stream (as the service's own connection may). */
async function storePost(m: TestMesh, text: string): Promise<void> {
  const from = localPrincipal("poster");
  await jetstream(m.serviceConnection).publish(
    chatSubject(m.space, from, "general"),
    encodeMessage({
      id: `p-${text}`,
      ts: Date.now(),
      space: m.space,
      from: { id: "local.poster", name: "poster" },
      channel: "general",
      parts: [{ kind: "text", text }],
    }),
  );
}

async function record(m: TestMesh, key: string): Promise<Record<string, unknown> | undefined> {
  const kv = await new Kvm(m.serviceConnection).open(names.membersBucket(m.space), { bindOnly: true });
  const e = await kv.get(key);
  return e && e.operation === "PUT" ? e.json<Record<string, unknown>>() : undefined;
}

describe("the mesh service's consumers and records", () => {
  test("defaults: 30 s ack wait, at most 1,000 unacked", () => {
    expect(ACK_WAIT_MS).toBe(30_000);
    expect(MAX_ACK_PENDING).toBe(1_000);
  });

  test("register: a DM inbox holding every stored DM, and the role's queue, each created once and recorded", async ({ nats }) => {
    mesh = await TestMesh.start(nats, "svcreg", { ackWaitMs: 12_000 });
    const space = mesh.space;
    const first = await mesh.service.register(alice, "reviewer");
    expect(first).toEqual({ dm: durables.dm(alice), dmCreated: true, anycast: durables.anycast("reviewer") });
    const dm = await consumer(mesh, names.dmStream(space), durables.dm(alice));
    expect(dm?.config).toMatchObject({
      durable_name: "dm_local-alice",
      filter_subject: filters.dmInbox(space, alice),
      deliver_policy: DeliverPolicy.All,
      ack_policy: AckPolicy.Explicit,
      ack_wait: 12_000 * 1_000_000,
      max_ack_pending: MAX_ACK_PENDING,
      max_deliver: -1,
    });
    const svc = await consumer(mesh, names.taskStream(space), "svc_reviewer");
    expect(svc?.config).toMatchObject({
      filter_subject: filters.anycast(space, "reviewer"),
      deliver_policy: DeliverPolicy.All,
      ack_policy: AckPolicy.Explicit,
    });
    expect(await record(mesh, "dm.local.alice")).toMatchObject({ durable: "dm_local-alice", stream: names.dmStream(space) });
    expect(await record(mesh, "svc.reviewer")).toMatchObject({ durable: "svc_reviewer", stream: names.taskStream(space) });
    expect(await mesh.service.register(alice, "reviewer")).toEqual({ dm: "dm_local-alice", dmCreated: false, anycast: "svc_reviewer" });
    expect(await mesh.service.register(localPrincipal("bob"))).toEqual({ dm: "dm_local-bob", dmCreated: true });
    expect(await consumer(mesh, names.taskStream(space), "svc_undefined")).toBeUndefined();
  });

  test("lookup says whether a name has a DM inbox, and its presence", async ({ nats }) => {
    mesh = await TestMesh.start(nats, "svclookup");
    await mesh.service.register(alice);
    // Static meshes also say which role the name's credential holds (none for a name never minted).
    const role = meshMode() === "static" ? { registeredRole: null } : {};
    // Registered, not joined: an inbox, no presence.
    expect(await mesh.service.lookup(alice)).toEqual({ principal: "local.alice", dm: true, ...role, status: "offline" });
    expect(await mesh.service.lookup(localPrincipal("nobody"))).toEqual({ principal: "local.nobody", dm: false, ...role, status: "offline" });
    const bob = await mesh.joined("bob");
    await until(async () => (await mesh!.service.lookup(localPrincipal("bob"))).status === "idle", 10_000, "the service's roster to show bob idle");
    await bob.close();
  });

  test("join: a consumer from the join watermark, recorded; joining again changes nothing; a lost consumer is recreated", async ({ nats }) => {
    mesh = await TestMesh.start(nats, "svcjoin");
    const space = mesh.space;
    await mayJoin(mesh, alice);
    await storePost(mesh, "one");
    await storePost(mesh, "two");
    const durable = durables.channel(alice, "general");
    const joined = await mesh.service.join(alice, "general");
    expect(joined).toEqual({ durable, created: true, watermark: 3 });
    const c = await consumer(mesh, names.chatStream(space), durable);
    expect(c?.config).toMatchObject({
      filter_subject: filters.channel(space, "general"),
      deliver_policy: DeliverPolicy.StartSequence,
      opt_start_seq: 3,
      ack_policy: AckPolicy.Explicit,
      ack_wait: ACK_WAIT_MS * 1_000_000,
    });
    expect(await record(mesh, "ch.local.alice.general")).toMatchObject({ durable, stream: names.chatStream(space), watermark: 3 });
    await storePost(mesh, "three");
    expect(await mesh.service.join(alice, "general")).toEqual({ durable, created: false, watermark: 3 });
    await (await mesh.dataJsm()).consumers.delete(names.chatStream(space), durable);
    expect(await mesh.service.join(alice, "general")).toEqual({ durable, created: true, watermark: 4 });
    expect(await record(mesh, "ch.local.alice.general")).toMatchObject({ watermark: 4 });
  });

  test("leave: the consumer and the record go; leaving again is harmless", async ({ nats }) => {
    mesh = await TestMesh.start(nats, "svcleave");
    const space = mesh.space;
    const durable = durables.channel(alice, "general");
    await mayJoin(mesh, alice);
    await mesh.service.join(alice, "general");
    expect(await consumer(mesh, names.chatStream(space), durable)).toBeDefined();
    expect(await mesh.service.leave(alice, "general")).toEqual({ left: true });
    expect(await consumer(mesh, names.chatStream(space), durable)).toBeUndefined();
    expect(await record(mesh, "ch.local.alice.general")).toBeUndefined();
    expect(await mesh.service.leave(alice, "general")).toEqual({ left: false });
  });
});

describe("the mesh service on the control rail", () => {
  test("arguments are checked before anything runs, and the reply says which", async ({ nats }) => {
    mesh = await TestMesh.start(nats, "svcargs");
    const nc = await mesh.rawConnection();
    const call = (command: string, args: Record<string, unknown>) =>
      requestControl(nc, mesh!.space, "mesh", command, SERVICE_PRINCIPALS.cli, args).catch((e: unknown) => e);
    for (const [command, args, what] of [
      ["join", { channel: "a..b" }, "join arguments"],
      ["leave", {}, "leave arguments"],
      ["register", { role: "r.x" }, "register arguments"],
      ["history", { channel: "general", limit: 0 }, "history arguments"],
      ["lookup", { name: "" }, "lookup arguments"],
    ] as const) {
      const err = await call(command, args);
      expect(err, command).toMatchObject({ code: "invalid-args", outcome: "not-executed" });
      expect(String((err as Error).message), command).toContain(`Invalid ${what}`);
    }
    expect(await consumer(mesh, names.chatStream(mesh.space), durables.channel(SERVICE_PRINCIPALS.cli, "general"))).toBeUndefined();
  });

  test("ping, roster and channels answer", async ({ nats }) => {
    mesh = await TestMesh.start(nats, "svcping");
    const nc = await mesh.rawConnection();
    const caller = SERVICE_PRINCIPALS.cli;
    expect(await callControl(nc, mesh.space, "ping", caller)).toEqual({ space: "svcping", pid: process.pid });
    const roster = await callControl(nc, mesh.space, "roster", caller);
    expect(Array.isArray(roster)).toBe(true);
    const channels = await callControl(nc, mesh.space, "channels", caller);
    expect(Array.isArray(channels)).toBe(true);
  });
});

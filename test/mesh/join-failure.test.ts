// join() is done only when its consumers are bound and consuming; a join that fails leaves
// nothing behind and says why; a consumer that disappears is re-created or reported lost; a
// refused live-channel read leaves no subscription behind.
import { Kvm } from "@nats-io/kv";
import { jetstreamManager } from "@nats-io/jetstream";
import { afterEach, describe } from "vitest";
import {
  ConsumerLostError,
  JoinFailedError,
  logger,
  MESH_ENDPOINT,
  MeshService,
  NotJoinedError,
  PermissionDeniedError,
  serveControl,
  setLogDestination,
  type ConsumerStatus,
  type MeshServiceOptions,
} from "../../broker/internal.js";
import { beatFilter, CotalError, MESH_COMMANDS, names } from "../../schemas/index.js";
import { collect } from "../harness/deliveries.js";
import { expect, test, until } from "../harness/fixtures.js";
import { TestMesh } from "../harness/mesh.js";
import { meshMode, startModeServer } from "../harness/mesh-mode.js";
import type { NatsServer } from "../../testbed/nats-server.js";

let mesh: TestMesh | undefined;
const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  setLogDestination(undefined);
  for (const c of cleanups.splice(0).reverse()) await Promise.resolve(c()).catch(() => undefined);
  await mesh?.close();
  mesh = undefined;
});

/** Parse every log line of components created from now on (restored after each test). */
function captureLogs(): Array<Record<string, unknown>> {
  const logs: Array<Record<string, unknown>> = [];
  setLogDestination({ write: (line: string) => void logs.push(JSON.parse(line) as Record<string, unknown>) });
  return logs;
}

/** In place of the (stopped) mesh service: one that answers register with an inbox that does not exist. */
async function fakeService(m: TestMesh) {
  const sub = serveControl(
    m.serviceConnection,
    m.space,
    MESH_ENDPOINT,
    { register: MESH_COMMANDS.register, roster: MESH_COMMANDS.roster },
    { register: async () => ({ dm: "dm_local-bob_missing", dmCreated: false }), roster: async () => [] },
    logger("fake-mesh-service"),
  );
  cleanups.push(() => sub.unsubscribe());
  await m.serviceConnection.flush();
  return sub;
}

/** Start a second mesh service on the mesh's own service connection (after the first was stopped). */
async function restartService(m: TestMesh, opts: MeshServiceOptions = {}): Promise<void> {
  const svc = await MeshService.start(m.serviceConnection, m.space, {
    ...opts,
    ...(meshMode() === "static" ? { auth: { store: m.store, server: m.server.url } } : {}),
  });
  cleanups.push(() => svc.stop());
}

describe("join() and its consumers", () => {
  test("a join whose inbox cannot be bound fails with a typed error and leaves nothing behind; a later join works", async ({ nats }) => {
    const logs = captureLogs();
    mesh = await TestMesh.start(nats, "joinfail");
    const alice = await mesh.joined("alice", { heartbeatMs: 100 });
    const bob = await mesh.endpoint("bob", { heartbeatMs: 100 });
    await mesh.service.stop();
    const fake = await fakeService(mesh);

    const err = await bob.join().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(JoinFailedError);
    expect((err as JoinFailedError).step).toMatch(/^binding the DM inbox dm_local-bob_missing/);
    expect(bob.consumerStatus()).toEqual([]);
    await expect(bob.joinChannel("general")).rejects.toBeInstanceOf(NotJoinedError);
    expect(logs.some((l) => l.level === 50 && l.msg === "join failed; undone" && (l.err as { code?: string }).code === "join-failed")).toBe(true);

    // Presence was left: an offline record, and nothing rewrites it (no beat either) while alice keeps beating.
    const kv = await new Kvm(mesh.serviceConnection).open(names.presenceBucket(mesh.space));
    const bobRecord = await kv.get("local.bob");
    expect(bobRecord?.json<{ status: string }>().status).toBe("offline");
    const beats = { alice: 0, bob: 0 };
    const onBeat = (subject: string) => (subject.endsWith(".alice") ? beats.alice++ : subject.endsWith(".bob") ? beats.bob++ : 0);
    const beatSub = mesh.serviceConnection.subscribe(beatFilter(mesh.space), { callback: (_err, m) => void onBeat(m.subject) });
    await until(() => beats.alice >= 5, 5_000, "alice beats five more times");
    beatSub.unsubscribe();
    expect(beats.bob).toBe(0);
    expect((await kv.get("local.bob"))?.revision).toBe(bobRecord!.revision);

    // With the real service back, the same endpoint joins and receives its DMs.
    fake.unsubscribe();
    await restartService(mesh);
    const got = collect(bob);
    const reg = await bob.join();
    expect(reg.dm).toBe("dm_local-bob");
    expect(bob.consumerStatus().map((s) => s.state)).toEqual(["consuming"]);
    await alice.dm("bob", "after the failed join");
    await until(() => got.texts().includes("after the failed join"), 5_000, "bob gets the DM");
  });

  test("a deleted inbox consumer is re-created through the mesh service, and DMs keep arriving once each", async ({ nats }) => {
    const logs = captureLogs();
    mesh = await TestMesh.start(nats, "rebind");
    const alice = await mesh.joined("alice");
    const bob = await mesh.joined("bob");
    const statuses: ConsumerStatus[] = [];
    bob.onConsumerStatus((s) => statuses.push(s));
    const got = collect(bob);
    await alice.dm("bob", "before");
    await until(() => got.texts().includes("before"), 5_000, "bob gets the first DM");

    const jsm = await jetstreamManager(mesh.serviceConnection); // the data account's rights
    expect(await jsm.consumers.delete(names.dmStream(mesh.space), "dm_local-bob")).toBe(true);
    await until(
      () => statuses.some((s) => s.state === "re-establishing") && bob.consumerStatus()[0]?.state === "consuming",
      10_000,
      "the inbox consumer is re-established",
    );
    await expect(jsm.consumers.info(names.dmStream(mesh.space), "dm_local-bob")).resolves.toBeDefined();

    await alice.dm("bob", "after");
    await until(() => got.texts().includes("after"), 5_000, "bob gets a DM sent after the consumer was re-created");
    expect(got.texts()).toEqual(["before", "after"]);
    expect(logs.some((l) => l.level === 40 && l.msg === "durable consumer re-established" && l.durable === "dm_local-bob")).toBe(true);
  });

  test("a consumer that cannot be re-created is reported lost, loudly, and comes back with the mesh service", async ({ nats }) => {
    const logs = captureLogs();
    mesh = await TestMesh.start(nats, "lost");
    const alice = await mesh.joined("alice");
    const bob = await mesh.joined("bob", { reestablishDelaysMs: [0, 50, 100] });
    await mesh.service.stop();
    const fake = await fakeService(mesh); // it re-registers, but the inbox it is given cannot be bound
    const jsm = await jetstreamManager(mesh.serviceConnection);
    await jsm.consumers.delete(names.dmStream(mesh.space), "dm_local-bob");

    await until(() => bob.consumerStatus()[0]?.state === "lost", 15_000, "the inbox consumer is reported lost");
    const [status] = bob.consumerStatus();
    expect(status).toMatchObject({ stream: names.dmStream(mesh.space), durable: "dm_local-bob_missing", state: "lost" }); // the last one it tried
    expect(status!.error).toBeInstanceOf(ConsumerLostError);
    expect(logs.some((l) => l.level === 50 && l.durable === "dm_local-bob" && String(l.msg).includes("lost"))).toBe(true);

    // Lost is not final: a DM sent meanwhile waits in the stream, and once the real mesh service
    // is back the endpoint, still trying, re-creates its inbox and gets it.
    await alice.dm("bob", "sent while lost");
    const got = collect(bob);
    fake.unsubscribe();
    await restartService(mesh);
    await until(() => bob.consumerStatus()[0]?.state === "consuming", 15_000, "the lost inbox consumer to come back");
    expect(bob.consumerStatus()[0]?.durable).toBe("dm_local-bob");
    await until(() => got.texts().includes("sent while lost"), 10_000, "bob gets the DM sent while his consumer was lost");
  });
});

describe("a refused live-channel read", () => {
  let server: NatsServer | undefined;
  afterEach(async () => {
    await mesh?.close();
    mesh = undefined;
    await server?.cleanup();
    server = undefined;
  });

  test("fails with a typed error and leaves no subscription behind", async () => {
    const logs = captureLogs();
    server = await startModeServer({ monitoring: true });
    // Open meshes: the mesh service refuses the history read. Static: the broker refuses the subscription.
    mesh = await TestMesh.start(server, "liveread", { authorizeRead: (_who, channel) => channel !== "notes" });
    await mesh.setChannel("notes", { class: "live" });
    await mesh.setChannel("general", { class: "live" });
    const creds =
      meshMode() === "static" ? await mesh.mint({ name: "bob", profile: "agent", allowSubscribe: ["general"], allowPublish: ["general"] }) : undefined;
    const bob = await mesh.joined("bob", creds ? { creds } : {});

    const err = await bob.joinChannel("notes").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CotalError);
    if (meshMode() === "static") {
      expect(err).toBeInstanceOf(PermissionDeniedError);
      expect((err as PermissionDeniedError).subject).toBe(`cotal.${mesh.space}.chat.*.*.notes`);
    } else {
      expect((err as CotalError).code).toBe("read-denied");
    }
    expect(bob.joinedChannels()).toEqual([]);
    expect(logs.filter((l) => JSON.stringify(l).includes("TypeError"))).toEqual([]);

    await bob.joinChannel("general"); // the endpoint goes on working
    await bob.nc.flush();
    const res = await fetch(`${server.monitorUrl}/connz?subs=1`);
    const connz = (await res.json()) as { connections: Array<{ name?: string; subscriptions_list?: string[] }> };
    const subs = connz.connections.find((c) => c.name === "bob")?.subscriptions_list ?? [];
    expect(subs).toContain(`cotal.${mesh.space}.chat.*.*.general`);
    expect(subs.filter((s) => s.endsWith(".notes"))).toEqual([]);
  });
});

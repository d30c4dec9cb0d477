// One typed contract for the control rail: every mesh command round-trips through
// the table in schemas/control-commands.ts on a real mesh; a reply that breaks its schema is a
// `bad-reply` naming command and field; bad args are `invalid-args` and nothing runs.
import { createHash } from "node:crypto";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { createUser } from "@nats-io/nkeys";
import { afterEach, describe } from "vitest";
import {
  callControl,
  ControlCallError,
  logger,
  requestControl,
  SERVICE_PRINCIPALS,
  serveControl,
  setLogDestination,
  type Endpoint,
} from "../../broker/internal.js";
import { ARTIFACT_CHUNK_BYTES, ARTIFACT_COMMANDS, durables, localPrincipal, MESH_COMMANDS, names } from "../../schemas/index.js";
import { expect, NatsServer, test } from "../harness/fixtures.js";
import { TestMesh } from "../harness/mesh.js";
import { meshMode } from "../harness/mesh-mode.js";

let mesh: TestMesh | undefined;
const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  setLogDestination(undefined);
  await mesh?.close();
  mesh = undefined;
  await Promise.all(cleanups.splice(0).map((c) => c().catch(() => undefined)));
});

const HELLO = { digest: `sha256:${createHash("sha256").update("hello").digest("hex")}`, base64: Buffer.from("hello").toString("base64") };
let upload = "";

type Ctx = { mesh: TestMesh; alice: Endpoint; cli: NatsConnection };
const isStatic = meshMode() === "static";

/** One round trip per mesh command; the mapped type makes a command without one a compile error. */
const SERVED = { ...MESH_COMMANDS, ...ARTIFACT_COMMANDS };
const ROUND_TRIPS: { [C in keyof typeof SERVED]: (ctx: Ctx) => Promise<void> } = {
  register: async ({ mesh, alice }) => {
    const r = await callControl(alice.nc, mesh.space, "register", alice.me);
    expect(r).toEqual({ dm: durables.dm(alice.me), dmCreated: false });
  },
  lookup: async ({ mesh, alice }) => {
    const r = await callControl(alice.nc, mesh.space, "lookup", alice.me, { name: "alice" });
    expect(r).toMatchObject({ principal: "local.alice", dm: true });
    expect((await callControl(alice.nc, mesh.space, "lookup", alice.me, { name: "local.nobody" })).dm).toBe(false);
  },
  join: async ({ mesh, alice }) => {
    const r = await callControl(alice.nc, mesh.space, "join", alice.me, { channel: "notes" });
    expect(r).toMatchObject({ durable: durables.channel(alice.me, "notes"), created: true });
    expect(r.watermark).toBeGreaterThanOrEqual(1);
  },
  leave: async ({ mesh, alice }) => {
    expect(await callControl(alice.nc, mesh.space, "leave", alice.me, { channel: "notes" })).toEqual({ left: true });
  },
  roster: async ({ mesh, alice }) => {
    const rows = await callControl(alice.nc, mesh.space, "roster", alice.me);
    expect(rows.map((r) => r.id)).toContain("local.alice");
  },
  history: async ({ mesh, alice }) => {
    await alice.send("general", "for the record");
    const page = await callControl(alice.nc, mesh.space, "history", alice.me, { channel: "general", limit: 5 });
    expect(page.items.map((h) => h.message.parts)).toContainEqual([{ kind: "text", text: "for the record" }]);
    expect(page.items.at(-1)).toMatchObject({ channel: "general", from: { owner: "local", actor: "alice" } });
  },
  channels: async ({ mesh, alice }) => {
    await mesh.setChannel("builds", { description: "CI results" });
    const list = await callControl(alice.nc, mesh.space, "channels", alice.me);
    expect(list.find((c) => c.name === "builds")).toMatchObject({ configured: true, config: { description: "CI results", class: "durable" } });
  },
  mint: async ({ mesh, cli }) => {
    const call = callControl(cli, mesh.space, "mint", SERVICE_PRINCIPALS.cli, {
      name: "bob",
      profile: "agent",
      allowSubscribe: ["general"],
      userPub: createUser().getPublicKey(),
    });
    if (!isStatic) return void (await expect(call).rejects.toMatchObject({ code: "open-mesh" }));
    const r = await call;
    expect(r.principal).toBe("local.bob");
    expect(r.jwt.split(".")).toHaveLength(3);
  },
  revoke: async ({ mesh, cli }) => {
    const call = callControl(cli, mesh.space, "revoke", SERVICE_PRINCIPALS.cli, { name: "bob" });
    if (!isStatic) return void (await expect(call).rejects.toMatchObject({ code: "open-mesh" }));
    expect(await call).toEqual({ principal: "local.bob", revoked: 1 });
  },
  "artifact-begin": async ({ mesh, alice }) => {
    const r = await callControl(alice.nc, mesh.space, "artifact-begin", alice.me, {
      digest: HELLO.digest,
      size: 5,
      name: "hello.txt",
      mediaType: "text/plain",
    });
    expect(r).toMatchObject({ known: false, chunkBytes: ARTIFACT_CHUNK_BYTES });
    upload = r.upload!;
  },
  "artifact-chunk": async ({ mesh, alice }) => {
    expect(await callControl(alice.nc, mesh.space, "artifact-chunk", alice.me, { upload, seq: 0, data: HELLO.base64 })).toEqual({ received: 5 });
  },
  "artifact-commit": async ({ mesh, alice }) => {
    const info = await callControl(alice.nc, mesh.space, "artifact-commit", alice.me, { upload });
    expect(info).toEqual({
      digest: HELLO.digest,
      size: 5,
      name: "hello.txt",
      mediaType: "text/plain",
      bucket: names.artifactsBucket(mesh.space),
      uploader: "local.alice",
    });
  },
  "artifact-get": async ({ mesh, alice }) => {
    const r = await callControl(alice.nc, mesh.space, "artifact-get", alice.me, { digest: HELLO.digest });
    expect(r).toMatchObject({ data: HELLO.base64, info: { size: 5 } });
  },
  grant: async ({ mesh, alice }) => {
    // Static: what the name was minted with (alice may read her own); open: nothing is minted.
    const r = await callControl(alice.nc, mesh.space, "grant", alice.me, { name: "alice" });
    expect(r).toMatchObject({ principal: "local.alice", minted: isStatic, allowSpawn: [] });
    if (isStatic) expect(r.profile).toBe("agent");
  },
  "may-approve": async ({ mesh, alice }) => {
    // The operator may answer any seat's asks; a name minted with no approve right may not (open: no rights, anyone may).
    expect(await callControl(alice.nc, mesh.space, "may-approve", alice.me, { name: "cotal_cli" })).toEqual({ principal: "local.cotal_cli", allowed: true });
    expect(await callControl(alice.nc, mesh.space, "may-approve", alice.me, { name: "alice" })).toEqual({ principal: "local.alice", allowed: !isStatic });
  },
  whoami: async ({ mesh, alice, cli }) => {
    // Static: the profile the name was minted with; open: no profiles, the principal only.
    expect(await callControl(alice.nc, mesh.space, "whoami", alice.me)).toEqual({ principal: "local.alice", ...(isStatic ? { profile: "agent" } : {}) });
    expect(await callControl(cli, mesh.space, "whoami", SERVICE_PRINCIPALS.cli)).toEqual({
      principal: "local.cotal_cli",
      ...(isStatic ? { profile: "cli" } : {}),
    });
  },
  ping: async ({ mesh, alice }) => {
    expect(await callControl(alice.nc, mesh.space, "ping", alice.me)).toEqual({ space: mesh.space, pid: process.pid });
  },
};

describe("the control table", () => {
  test("every command the mesh service serves round-trips through the typed table", async ({ nats }) => {
    mesh = await TestMesh.start(nats, "ctltable");
    const ctx: Ctx = { mesh, alice: await mesh.joined("alice"), cli: await mesh.rawConnection() };
    const ran: string[] = [];
    for (const [command, roundTrip] of Object.entries(ROUND_TRIPS)) {
      await roundTrip(ctx);
      ran.push(command);
    }
    expect(ran.sort()).toEqual(Object.keys(SERVED).sort());
  });

  test("bad args are invalid-args naming the command and field, and nothing runs", async ({ nats }) => {
    mesh = await TestMesh.start(nats, "ctlargs");
    const alice = await mesh.endpoint("alice");
    for (const args of [{ channel: 42 }, { channel: "a..b" }, {}]) {
      const err = await requestControl(alice.nc, mesh.space, "mesh", "join", alice.me, args).catch((e: unknown) => e);
      expect(err, JSON.stringify(args)).toBeInstanceOf(ControlCallError);
      expect(err).toMatchObject({ code: "invalid-args", outcome: "not-executed", command: "join" });
      expect((err as Error).message).toMatch(/^join: Invalid join arguments: channel: /);
    }
    const jsm = await mesh.dataJsm();
    const consumers: string[] = [];
    for await (const c of jsm.consumers.list(names.chatStream(mesh.space))) consumers.push(c.name);
    expect(consumers).toEqual([]);
  });
});

describe("replies that break their schema", () => {
  async function plainServer(): Promise<NatsConnection> {
    const server = await NatsServer.start();
    const nc = await connect({ servers: server.url });
    cleanups.push(
      () => server.cleanup(),
      () => nc.close(),
    );
    return nc;
  }
  const alice = localPrincipal("alice");

  test("a responder answering join with a wrong shape makes callControl throw bad-reply naming command and field", async () => {
    const nc = await plainServer();
    nc.subscribe("cotal.fake.ep.mesh.one.join.*.*", {
      callback: (_e, m) => {
        const { id } = JSON.parse(new TextDecoder().decode(m.data)) as { id: string };
        m.respond(JSON.stringify({ id, ok: true, data: { durable: 7, created: true, watermark: 1 } }));
      },
    });
    await nc.flush();
    const err = await callControl(nc, "fake", "join", alice, { channel: "general" }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ControlCallError);
    expect(err).toMatchObject({ code: "bad-reply", command: "join", outcome: "unknown" });
    expect((err as Error).message).toMatch(/^join: the reply does not match the join reply schema: durable: /);
  });

  test("a handler whose data breaks the reply schema is answered internal naming the field, and logged", async () => {
    const nc = await plainServer();
    const logs: Array<Record<string, unknown>> = [];
    setLogDestination({ write: (line: string) => void logs.push(JSON.parse(line) as Record<string, unknown>) });
    const log = logger("table-test");
    serveControl(nc, "fake", "mesh", { leave: MESH_COMMANDS.leave }, { leave: async () => ({ left: "yes" }) as unknown as { left: boolean } }, log);
    await nc.flush();
    const err = await callControl(nc, "fake", "leave", alice, { channel: "general" }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "internal", outcome: "executed", command: "leave" });
    expect((err as Error).message).toContain("the leave reply does not match its schema: left: ");
    expect(logs).toContainEqual(expect.objectContaining({ command: "leave", msg: "control handler's reply does not match its schema; answered internal" }));
  });
});

// Only the mesh host's operator credential may mint or revoke, and a durable channel membership
// is created only for a caller allowed to read the channel — checked by the mesh service itself,
// not only by the broker's permissions (both checks could once be removed without a failing
// test: mutation testing found it). Written against public behaviour: minted credentials, the
// control rail, consumers.
import { createUser } from "@nats-io/nkeys";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { callControl, ControlCallError, isConsumerNotFound, isPermissionDenied, isTimeout, requestRevoke, SERVICE_PRINCIPALS } from "../../broker/internal.js";
import { durables, localPrincipal, names } from "../../schemas/index.js";
import { TestMesh } from "../harness/mesh.js";
import { NatsServer } from "../../testbed/nats-server.js";
import { until } from "../../testbed/until.js";

const SPACE = "opsonly";
const eve = localPrincipal("eve");

let mesh: TestMesh;
let eveCreds: string;

beforeAll(async () => {
  mesh = await TestMesh.startStatic(SPACE);
  eveCreds = await mesh.mint({ name: "eve", profile: "agent", allowSubscribe: ["lobby"], allowPublish: ["lobby"] });
});
afterAll(async () => {
  await mesh?.close();
});

function mintArgs(name: string) {
  return { name, profile: "admin" as const, allowSubscribe: [], allowPublish: [], provision: true, userPub: createUser().getPublicKey() };
}

/** Refused by the broker (permission) or by the mesh service (not-allowed); a timeout is not a refusal. */
function expectRefused(err: unknown): void {
  expect(isTimeout(err), `a timeout is not a refusal: ${String(err)}`).toBe(false);
  const byService = err instanceof ControlCallError && err.code === "not-allowed";
  expect(isPermissionDenied(err) || byService, `expected a refusal, got ${String(err)}`).toBe(true);
}

async function consumerExists(stream: string, durable: string): Promise<boolean> {
  const jsm = await mesh.dataJsm();
  try {
    await jsm.consumers.info(stream, durable);
    return true;
  } catch (err) {
    if (isConsumerNotFound(err)) return false;
    throw err;
  }
}

/** How many credentials the operator finds to revoke for `name` (0: it was never minted). */
async function issuedTo(name: string): Promise<number> {
  const cli = await mesh.connection(mesh.cliCreds);
  return (await requestRevoke(cli, SPACE, name)).revoked;
}

describe("only the operator mints and revokes", () => {
  test("an agent credential asking to mint is refused, and nothing is minted or provisioned", async () => {
    const nc = await mesh.connection(eveCreds, "_INBOX.local.eve");
    const err = await callControl(nc, SPACE, "mint", eve, mintArgs("sneaky"), { timeoutMs: 2_000 }).catch((e: unknown) => e);
    expectRefused(err);
    expect(await consumerExists(names.dmStream(SPACE), durables.dm(localPrincipal("sneaky")))).toBe(false);
    expect(await issuedTo("sneaky")).toBe(0);
  });

  test("an agent credential asking to revoke another identity is refused, and that identity keeps its credential", async () => {
    const victimCreds = await mesh.mint({ name: "victim", profile: "agent" });
    const nc = await mesh.connection(eveCreds, "_INBOX.local.eve");
    const err = await callControl(nc, SPACE, "revoke", eve, { name: "victim" }, { timeoutMs: 2_000 }).catch((e: unknown) => e);
    expectRefused(err);
    const victim = await mesh.connection(victimCreds, "_INBOX.local.victim");
    await victim.flush();
    expect(victim.isClosed()).toBe(false);
  });

  test("the mesh service refuses mint and revoke from any caller but the operator, even when the broker lets the call through", async () => {
    // The operator's own credential may publish as anyone: only the service's check stands here.
    const cli = await mesh.connection(mesh.cliCreds);
    const victimCreds = await mesh.mint({ name: "victim2", profile: "agent" });
    for (const caller of [localPrincipal("alice"), SERVICE_PRINCIPALS.mesh]) {
      const minted = await callControl(cli, SPACE, "mint", caller, mintArgs("sneaky2")).catch((e: unknown) => e);
      expect(minted).toBeInstanceOf(ControlCallError);
      expect(minted).toMatchObject({ code: "not-allowed", outcome: "not-executed" });
      const revoked = await callControl(cli, SPACE, "revoke", caller, { name: "victim2" }).catch((e: unknown) => e);
      expect(revoked).toMatchObject({ code: "not-allowed", outcome: "not-executed" });
    }
    expect(await consumerExists(names.dmStream(SPACE), durables.dm(localPrincipal("sneaky2")))).toBe(false);
    expect(await issuedTo("sneaky2")).toBe(0);
    const victim = await mesh.connection(victimCreds, "_INBOX.local.victim2");
    await victim.flush();
    expect(victim.isClosed()).toBe(false);
    // The operator itself may.
    const ok = await callControl(cli, SPACE, "mint", SERVICE_PRINCIPALS.cli, mintArgs("legit"));
    expect(ok.principal).toBe("local.legit");
    expect(await issuedTo("legit")).toBe(1);
  });

  test("an open mesh has nothing to mint or revoke", async () => {
    const server = await NatsServer.start();
    const open = await TestMesh.start(server, "openmint");
    try {
      const nc = await open.rawConnection();
      const err = await callControl(nc, "openmint", "mint", SERVICE_PRINCIPALS.cli, mintArgs("x")).catch((e: unknown) => e);
      expect(err).toMatchObject({ code: "open-mesh" });
      expect(await callControl(nc, "openmint", "revoke", SERVICE_PRINCIPALS.cli, { name: "x" }).catch((e: unknown) => e)).toMatchObject({ code: "open-mesh" });
    } finally {
      await open.close();
      await server.cleanup();
    }
  });
});

describe("joining a channel needs read access to it", () => {
  test("an agent joining a channel outside its --allow-subscribe is read-denied and no membership is created", async () => {
    const nc = await mesh.connection(eveCreds, "_INBOX.local.eve");
    const err = await callControl(nc, SPACE, "join", eve, { channel: "general" }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ControlCallError);
    expect(err).toMatchObject({ code: "read-denied", outcome: "not-executed" });
    expect(await consumerExists(names.chatStream(SPACE), durables.channel(eve, "general"))).toBe(false);
    // A channel it may read: joined, with its consumer.
    const joined = await callControl(nc, SPACE, "join", eve, { channel: "lobby" });
    expect(joined).toMatchObject({ durable: durables.channel(eve, "lobby"), created: true });
    expect(await consumerExists(names.chatStream(SPACE), durables.channel(eve, "lobby"))).toBe(true);
  });

  test("the service checks read access itself: a join sent in another agent's name for a channel it may not read is refused", async () => {
    const cli = await mesh.connection(mesh.cliCreds);
    const err = await callControl(cli, SPACE, "join", eve, { channel: "builds" }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "read-denied" });
    expect(await consumerExists(names.chatStream(SPACE), durables.channel(eve, "builds"))).toBe(false);
  });

  test("only the operator may create another's membership (join {member}); an agent asking is refused and nothing is created", async () => {
    const nc = await mesh.connection(eveCreds, "_INBOX.local.eve");
    const mallory = localPrincipal("mallory");
    const err = await callControl(nc, SPACE, "join", eve, { channel: "lobby", member: "local.mallory" }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "not-allowed", outcome: "not-executed" });
    expect(await consumerExists(names.chatStream(SPACE), durables.channel(mallory, "lobby"))).toBe(false);
  });

  test("the operator listening as a name this mesh never minted (--impersonate) joins a channel with its own read right and gets its posts", async () => {
    // What `cotal listen --as bob --impersonate --channel general` does: bob has no record, so no read right of its own.
    const bob = await mesh.endpoint("bob", { creds: mesh.cliCreds, impersonatedBy: "local.cotal_cli" });
    await bob.join();
    const got: string[] = [];
    void (async () => {
      for await (const d of bob.deliveries) {
        got.push(d.message.parts.map((p) => (p.kind === "text" ? p.text : p.kind)).join(""));
        await d.ack();
      }
    })();
    await expect(bob.joinChannel("general")).resolves.toMatchObject({ class: "durable" });
    expect(await consumerExists(names.chatStream(SPACE), durables.channel(localPrincipal("bob"), "general"))).toBe(true);
    const alice = await mesh.endpoint("alice", { creds: mesh.cliCreds, impersonatedBy: "local.cotal_cli" });
    await alice.send("general", "hello");
    await until(() => got.includes("hello"), 10_000, "bob to get alice's post on general");
    await expect(bob.history("general")).resolves.toHaveLength(1);
  });
});

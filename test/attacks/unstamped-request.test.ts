// The hole this closes: the mesh service trusted the caller its subject names when a control request
// carried no sender stamped by the server (`Nats-Request-Info`), for every command but mint and
// revoke. A request comes so over a clients account signed before the control rail's import shared
// who asks (an upgraded mesh until `cotal up` signs it again) and from inside the data account. A
// leaf credential, which may publish under any name, then acted as another host's manager. In
// static mode such a request is refused, naming why; open meshes have no stamp and are unchanged.
// Black-box: a real operator-mode server, credentials minted as users mint them, raw NATS clients.
import { encodeAccount, type Account } from "@nats-io/jwt";
import { connect, credsAuthenticator, headers, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { callControl, clientsAccount, ControlCallError, isPermissionDenied, pushAccountJwt, pushSpaceAccounts, serviceCreds } from "../../broker/internal.js";
import { localPrincipal, type Principal } from "../../schemas/index.js";
import { TestMesh } from "../harness/mesh.js";
import { NatsServer } from "../../testbed/nats-server.js";
import { startStaticServer } from "../harness/mesh-mode.js";

const SPACE = "unstamped";
let server: NatsServer;
let mesh: TestMesh;
const creds: Record<string, string> = {};
const alice = localPrincipal("alice");
const hostc = localPrincipal("hostc");

beforeAll(async () => {
  server = await startStaticServer();
  mesh = await TestMesh.start(server, SPACE);
  creds.alice = await mesh.mint({ name: "alice", profile: "agent", allowSubscribe: ["general"], allowPublish: ["general"], provision: true });
  creds.leaf = await mesh.mint({ name: "hostb_leaf", profile: "leaf" });
  creds.hostc = await mesh.mint({ name: "hostc", profile: "manager" });
}, 60_000);

afterAll(async () => {
  await mesh?.close();
  await server?.cleanup();
});

/**
 * Sign the clients account as a Cotal from before the sharing import did: the same imports, none
 * of them sharing who asks, pushed to the running server.
 */
async function unshareControlRail(): Promise<void> {
  const store = mesh.store;
  const account = clientsAccount(SPACE);
  const payload = JSON.parse(Buffer.from(store.accountJwt(account).split(".")[1]!, "base64url").toString("utf8")) as {
    nats: Partial<Account> & { type?: string; version?: number };
  };
  const { type: _type, version: _version, ...claims } = payload.nats;
  claims.imports = (claims.imports ?? []).map(({ share: _share, ...i }) => i);
  expect(claims.imports.length).toBeGreaterThan(0);
  const jwt = await encodeAccount(account.replace("/", ":"), store.accountKey(account), claims, { signer: store.operatorKey() });
  await pushAccountJwt(store, server.url, jwt);
}

const hostb = localPrincipal("hostb");

/** The leaf credential as a client, replying on its host's manager's inbox (the identity it may act as). */
function asLeaf(): Promise<NatsConnection> {
  return mesh.connection(creds.leaf, "_INBOX.local.hostb");
}

/** A connection of `who`'s credential, replying on its own inbox. */
function as(who: string): Promise<NatsConnection> {
  return mesh.connection(creds[who], `_INBOX.local.${who}`);
}

/** The refusal of a request that came without the server's word on its sender. */
function expectUnstamped(err: unknown): void {
  expect(err, `expected a refusal, got ${String(err)}`).toBeInstanceOf(ControlCallError);
  const e = err as ControlCallError;
  expect(e.code).toBe("not-allowed");
  expect(e.message).toContain("carries no sender stamped by the server");
}

async function call(nc: NatsConnection, command: "whoami" | "join", caller: Principal): Promise<unknown> {
  const args = command === "join" ? { channel: "general" } : {};
  return callControl(nc, SPACE, command, caller, args as never, { timeoutMs: 3_000 }).catch((e: unknown) => e);
}

describe("a control request without the server's stamp of its sender (static mode)", () => {
  test("stamped, a leaf credential is refused as another host's manager and an agent is served", async () => {
    expect(await call(await as("alice"), "join", alice)).toMatchObject({ durable: expect.any(String) });
    // The broker refuses it first (the leaf's scope carries its own host only); the service would too.
    const asHostc = await call(await asLeaf(), "whoami", hostc);
    expect(isPermissionDenied(asHostc) || (asHostc instanceof ControlCallError && asHostc.code === "not-allowed"), String(asHostc)).toBe(true);
  });

  test("from inside the data account (no header at all): refused, nothing done", async () => {
    const nc = await connect({ servers: server.url, authenticator: credsAuthenticator(await serviceCreds(mesh.store, SPACE, "mesh")) });
    try {
      expectUnstamped(await call(nc, "whoami", hostc));
      expectUnstamped(await call(nc, "join", alice));
    } finally {
      await nc.close();
    }
  });

  describe("over a clients account signed before the import shared who asks", () => {
    beforeAll(unshareControlRail, 30_000);
    afterAll(() => pushSpaceAccounts(mesh.store, server.url, SPACE));

    test("an agent's own request is refused, naming the fix", async () => {
      const err = await call(await as("alice"), "join", alice);
      expectUnstamped(err);
      expect((err as ControlCallError).message).toContain("run `cotal up` on the mesh host");
    });

    test("a leaf credential acting as its host's manager is refused, with or without a forged stamp", async () => {
      // The broker lets the leaf publish as hostb (its host's manager): only the service's stamp check stands here.
      const nc = await asLeaf();
      expectUnstamped(await call(nc, "whoami", hostb));
      // A header the sender wrote is no stamp: the server replaces or drops it, it never names the operator.
      const h = headers();
      h.set("Nats-Request-Info", JSON.stringify({ user: "U".padEnd(56, "A"), name_tag: "local.hostb", tags: ["cotal-profile:manager"] }));
      const body = JSON.stringify({ id: "x", deadline: Date.now() + 3_000, caller: "local.hostb", args: {} });
      const reply = await nc.request(`cotal.${SPACE}.ep.mesh.one.whoami.local.hostb`, body, { timeout: 3_000, headers: h });
      expect(JSON.parse(new TextDecoder().decode(reply.data))).toMatchObject({ ok: false, error: { code: "not-allowed" } });
    });
  });

  test("signed again (as `cotal up` does), the same requests are served", async () => {
    expect(await call(await as("alice"), "whoami", alice)).toMatchObject({ principal: "local.alice", profile: "agent" });
  });
});

describe("an open mesh has no stamps and is unchanged", () => {
  test("a request names its caller and is served", async () => {
    const open = await NatsServer.start();
    const m = await TestMesh.start(open, "openmesh");
    try {
      const nc = await m.connection();
      expect(await callControl(nc, "openmesh", "join", alice, { channel: "general" }, { timeoutMs: 3_000 })).toMatchObject({ created: true });
    } finally {
      await m.close();
      await open.cleanup();
    }
  });
});

// The hole this closes: a leaf credential was the operator. Used as an ordinary client (or by whoever
// runs the leaf host's nats-server), the `leaf` credential called `mint` as local.cotal_cli, revoked
// others, read the members bucket and wrote channel, presence and managers keys; what it minted
// survived `cotal revoke <leaf>`. Black-box: a real operator-mode server with a leaf-node listener,
// credentials minted as users mint them, raw NATS clients, and a real leaf server in front of the hub.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, credsAuthenticator, headers, type NatsConnection } from "@nats-io/transport-node";
import { createUser } from "@nats-io/nkeys";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import {
  callControl,
  clientsAccount,
  ControlCallError,
  isPermissionDenied,
  isTimeout,
  MeshServiceUnavailableError,
  permissionViolation,
  awaitCredentialCarried,
  requestCredential,
  requestRevoke,
  SERVICE_PRINCIPALS,
} from "../../broker/internal.js";
import { durables, localPrincipal, names, patterns, type Principal } from "../../schemas/index.js";
import { TestMesh } from "../harness/mesh.js";
import { startStaticServer } from "../harness/mesh-mode.js";
import { findNatsServer, type NatsServer } from "../../testbed/nats-server.js";
import { freePort } from "../../testbed/ports.js";
import { until } from "../../testbed/until.js";

const SPACE = "leafatk";
const dir = mkdtempSync(join(tmpdir(), "cotal-leafatk-"));
let server: NatsServer;
let mesh: TestMesh;
let leafPort = 0;
const creds: Record<string, string> = {};
const children: ChildProcess[] = [];
const hostb = localPrincipal("hostb");

beforeAll(async () => {
  leafPort = await freePort();
  server = await startStaticServer({ config: `leafnodes { listen: "127.0.0.1:${leafPort}" }` });
  mesh = await TestMesh.start(server, SPACE);
  creds.leaf = await mesh.mint({ name: "hostb_leaf", profile: "leaf" });
  for (const m of ["hostb", "hostc"]) creds[m] = await mesh.mint({ name: m, profile: "manager" });
  for (const a of ["alice", "carol"])
    creds[a] = await mesh.mint({ name: a, profile: "agent", allowSubscribe: ["general"], allowPublish: ["general"], provision: true });
}, 60_000);

afterAll(async () => {
  for (const c of children) c.kill("SIGKILL");
  await mesh?.close();
  await server?.cleanup();
  rmSync(dir, { recursive: true, force: true });
});

function mintArgs(name: string, profile: "agent" | "admin" | "manager" = "agent") {
  return { name, profile, allowSubscribe: [], allowPublish: [], provision: false, userPub: createUser().getPublicKey() };
}

/** Refused by the broker (permission) or the mesh service (not-allowed): a timeout is not a refusal. */
function expectRefused(err: unknown): void {
  expect(isTimeout(err), `a timeout is not a refusal: ${String(err)}`).toBe(false);
  const byService = err instanceof ControlCallError && err.code === "not-allowed";
  expect(isPermissionDenied(err) || byService, `expected a refusal, got ${String(err)}`).toBe(true);
}

/** The identity record the mesh service keeps for `name` (data account), if any. */
async function identity(name: string): Promise<string | undefined> {
  const jsm = await mesh.dataJsm();
  const m = await jsm.streams
    .getMessage(`KV_${names.membersBucket(SPACE)}`, { last_by_subj: `$KV.${names.membersBucket(SPACE)}.id.local.${name}` })
    .catch(() => undefined);
  return m ? new TextDecoder().decode(m.data) : undefined;
}

/** A raw publish the broker must refuse: the server's permission error arrives as the request's failure. */
async function publishRefused(nc: NatsConnection, subject: string, data = "{}"): Promise<void> {
  const err = await nc.request(subject, data, { timeout: 3_000 }).catch((e: unknown) => e);
  expect(isPermissionDenied(err), `${subject}: expected a permission refusal, got ${String(err)}`).toBe(true);
}

/** The leaf credential as an ordinary client, replying on the inbox of `as` (default: its host's manager, whose rights it has). */
async function leafClient(as: Principal = hostb): Promise<NatsConnection> {
  const nc = await mesh.connection(creds.leaf, `_INBOX.${as.owner}.${as.actor}`);
  leafClients.push(nc);
  return nc;
}
/** Closed after each test: a leaf credential may hold only a few client connections at once (PROFILE_LIMITS.leaf). */
const leafClients: NatsConnection[] = [];
afterEach(async () => {
  for (const nc of leafClients.splice(0)) await nc.close();
});

/** Until the hub carries `seat` for the leaf (a mint through it remade the leaf's connection): a ping as it is answered. */
async function carried(seat: Principal): Promise<void> {
  const probe = await leafClient(seat);
  try {
    await until(
      () =>
        callControl(probe, SPACE, "ping", seat, {}, { timeoutMs: 500 }).then(
          () => true,
          () => false,
        ),
      15_000,
      `the hub to carry ${seat.actor} for the leaf`,
    );
  } finally {
    await probe.close();
  }
}

/** Cut when revoked: resolves once `nc` is closed. */
function closedFlag(nc: NatsConnection): () => boolean {
  let closed = false;
  void nc.closed().then(() => (closed = true));
  return () => closed;
}

describe("a leaf credential used as an ordinary client is not the operator", () => {
  test("minting as local.cotal_cli (admin, manager) is refused, with or without a forged Nats-Request-Info; nothing is minted", async () => {
    const nc = await leafClient();
    for (const [name, profile] of [
      ["sneaky_admin", "admin"],
      ["sneaky_mgr", "manager"],
    ] as const) {
      expectRefused(await callControl(nc, SPACE, "mint", SERVICE_PRINCIPALS.cli, mintArgs(name, profile), { timeoutMs: 3_000 }).catch((e: unknown) => e));
      expect(await identity(name)).toBeUndefined();
    }
    // The server replaces whatever header the sender brought: naming the operator changes nothing
    // (asked as its own host's manager, which may mint agents only).
    const h = headers();
    h.set("Nats-Request-Info", JSON.stringify({ user: "U".padEnd(56, "A"), name_tag: "local.cotal_cli", tags: ["cotal-profile:cli"] }));
    const body = JSON.stringify({ id: "x", deadline: Date.now() + 3_000, caller: "local.hostb", args: mintArgs("sneaky_hdr", "admin") });
    const reply = await nc.request(`cotal.${SPACE}.ep.mesh.one.mint.local.hostb`, body, { timeout: 3_000, headers: h });
    expect(JSON.parse(new TextDecoder().decode(reply.data))).toMatchObject({ ok: false, error: { code: "not-allowed" } });
    expect(await identity("sneaky_hdr")).toBeUndefined();
  });

  test("revoking another identity is refused, as the operator and as another host's manager; the victim stays connected", async () => {
    const nc = await leafClient();
    const victim = await mesh.connection(creds.alice, "_INBOX.local.alice");
    const cut = closedFlag(victim);
    const carolMintedByHostc = await callControl(
      await mesh.connection(creds.hostc, "_INBOX.local.hostc"),
      SPACE,
      "mint",
      localPrincipal("hostc"),
      mintArgs("hostc_seat"),
    );
    expect(carolMintedByHostc.principal).toBe("local.hostc_seat");
    for (const [as, name] of [
      [SERVICE_PRINCIPALS.cli, "alice"],
      [localPrincipal("hostc"), "hostc_seat"],
      [localPrincipal("hostc"), "alice"],
      // As its own host's manager: alice is not a name that manager minted.
      [hostb, "alice"],
    ] as Array<[Principal, string]>) {
      expectRefused(await callControl(nc, SPACE, "revoke", as, { name }, { timeoutMs: 3_000 }).catch((e: unknown) => e));
    }
    await victim.flush();
    expect(cut()).toBe(false);
  });

  test("the members bucket cannot be read; channel, another manager's and the operator's keys cannot be written", async () => {
    const nc = await leafClient();
    const members = names.membersBucket(SPACE);
    await publishRefused(nc, `$JS.API.STREAM.MSG.GET.KV_${members}`, JSON.stringify({ last_by_subj: `$KV.${members}.id.local.alice` }));
    await publishRefused(nc, `$JS.API.STREAM.INFO.KV_${members}`);
    await publishRefused(nc, `$KV.${names.channelsBucket(SPACE)}.general`, JSON.stringify({ name: "general", retention: "forever" }));
    await publishRefused(nc, `$KV.${names.managersBucket(SPACE)}.hostc`, JSON.stringify({ instance: "hostc" }));
    await publishRefused(nc, `$KV.${names.presenceBucket(SPACE)}.local.cotal_cli`, JSON.stringify({ id: "local.cotal_cli" }));
    await publishRefused(nc, `cotal.${SPACE}.chat.local.cotal_cli.general`, JSON.stringify({ text: "from the operator" }));
    await publishRefused(nc, `cotal.${SPACE}.seat.local.x.local.hostc`, JSON.stringify({ kind: "retired" }));
    await publishRefused(nc, `cotal.${SPACE}.ep.manager.hostc.spawn.local.hostb`, JSON.stringify({}));
  });

  test("the operator's DM inbox cannot be bound or pulled, nor the operator's replies read", async () => {
    const nc = await leafClient();
    const inbox = durables.dm(SERVICE_PRINCIPALS.cli);
    await publishRefused(nc, `$JS.API.CONSUMER.INFO.${names.dmStream(SPACE)}.${inbox}`);
    await publishRefused(nc, `$JS.API.CONSUMER.MSG.NEXT.${names.dmStream(SPACE)}.${inbox}`, JSON.stringify({ batch: 1 }));
    const sub = nc.subscribe(patterns.inbox(SERVICE_PRINCIPALS.cli));
    await nc.flush();
    const closed = await Promise.race([sub.closed, new Promise((r) => setTimeout(() => r("open"), 2_000))]);
    expect(permissionViolation(closed), "subscribing to the operator's inbox is refused").toBeDefined();
  });

  test("what it may do: act as its host's manager (mint that manager's seats) and as the seats it minted", async () => {
    const nc = await leafClient();
    const r = await callControl(nc, SPACE, "mint", hostb, mintArgs("seat_one"));
    expect(r.principal).toBe("local.seat_one");
    // Its scope widens to the new seat: the hub remakes the leaf's connection, and says so.
    expect(r.leafReconnect).toBe(true);
    expect(JSON.parse((await identity("seat_one"))!)).toMatchObject({ mintedBy: "local.hostb", users: [{ via: "local.hostb_leaf" }] });
    await carried(localPrincipal("seat_one"));
    const asSeat = await leafClient(localPrincipal("seat_one"));
    expect((await callControl(asSeat, SPACE, "whoami", localPrincipal("seat_one"))).principal).toBe("local.seat_one");
    // The host manager's own heartbeat key is its to write.
    await (await leafClient()).request(`$KV.${names.managersBucket(SPACE)}.hostb`, JSON.stringify({ instance: "hostb" }), { timeout: 3_000 });
  });
});

describe("a real leaf server in front of the hub", () => {
  let leafClientPort = 0;
  beforeAll(async () => {
    leafClientPort = await freePort();
    const store = mesh.store;
    const clients = store.accountKey(clientsAccount(SPACE)).getPublicKey();
    const sys = store.accountKey("SYS").getPublicKey();
    const conf = join(dir, "leaf.conf");
    writeFileSync(
      conf,
      [
        `listen: "127.0.0.1:${leafClientPort}"`,
        `operator: ${JSON.stringify(store.operatorJwt())}`,
        `system_account: ${sys}`,
        "resolver: MEMORY",
        "resolver_preload: {",
        `  ${sys}: ${JSON.stringify(store.accountJwt("SYS"))}`,
        `  ${clients}: ${JSON.stringify(store.accountJwt(clientsAccount(SPACE)))}`,
        "}",
        `leafnodes { remotes: [ { url: "nats://127.0.0.1:${leafPort}", account: ${clients}, credentials: ${JSON.stringify(creds.leaf)} } ] }`,
        "",
      ].join("\n"),
    );
    let out = "";
    const child = spawn(findNatsServer(), ["-c", conf], { stdio: ["ignore", "pipe", "pipe"] });
    child.stderr!.on("data", (b: Buffer) => (out += b.toString()));
    children.push(child);
    await until(() => /Leafnode connection created/.test(out), 10_000, "the leaf server to connect to the hub");
  }, 30_000);

  async function onLeaf(file: string, who: Principal): Promise<NatsConnection> {
    return connect({
      servers: `127.0.0.1:${leafClientPort}`,
      authenticator: credsAuthenticator(readFileSync(file)),
      inboxPrefix: `_INBOX.${who.owner}.${who.actor}`,
    });
  }

  test("the host's manager mints its seat through the leaf; acting as another host's manager is refused by the hub", async () => {
    const mgr = await onLeaf(creds.hostb!, hostb);
    try {
      await until(
        async () =>
          (await callControl(mgr, SPACE, "ping", hostb, {}, { timeoutMs: 1_000 }).then(
            () => true,
            () => false,
          )) === true,
        10_000,
        "the control rail to answer through the leaf",
      );
      // As a manager mints a seat there (seat-credential.ts): the credential, then until the hub carries it.
      const { creds: seatCreds, reply } = await requestCredential(
        mgr,
        SPACE,
        { name: "seat_two", profile: "agent", allowSubscribe: ["general"], allowPublish: ["general"], provision: true },
        hostb,
      );
      expect(reply).toMatchObject({ principal: "local.seat_two", leafReconnect: true });
      expect(JSON.parse((await identity("seat_two"))!)).toMatchObject({ mintedBy: "local.hostb", users: [{ via: "local.hostb_leaf" }] });
      writeFileSync(join(dir, "seat_two.creds"), seatCreds, { mode: 0o600 });
      creds.seat_two = join(dir, "seat_two.creds");
      await awaitCredentialCarried(`127.0.0.1:${leafClientPort}`, creds.seat_two, SPACE, localPrincipal("seat_two"));
    } finally {
      await mgr.close();
    }
    // Whoever runs the leaf server passes its own clients' checks: here a client it lets act as
    // hostc. The hub told the leaf server what its connection may carry: the request goes nowhere.
    const rogue = await onLeaf(creds.hostc!, localPrincipal("hostc"));
    try {
      const err = await callControl(rogue, SPACE, "mint", localPrincipal("hostc"), mintArgs("rogue_seat"), { timeoutMs: 3_000 }).catch((e: unknown) => e);
      expect(err instanceof MeshServiceUnavailableError || isPermissionDenied(err), String(err)).toBe(true);
      expect(await identity("rogue_seat")).toBeUndefined();
    } finally {
      await rogue.close();
    }
  });

  test("a name that does not run on the host does not pass the hub: alice's post from the leaf server never arrives, its seat's does", async () => {
    const hub = await mesh.connection(mesh.cliCreds);
    const got: string[] = [];
    hub.subscribe(`cotal.${SPACE}.chat.>`, { callback: (_e, m) => void got.push(`${m.subject} ${new TextDecoder().decode(m.data)}`) });
    await hub.flush();
    // alice's own credential, on the leaf host: the leaf server lets it post as alice (its own check passes).
    const aliceThere = await onLeaf(creds.alice!, localPrincipal("alice"));
    const seatThere = await onLeaf(creds.seat_two!, localPrincipal("seat_two"));
    try {
      aliceThere.publish(`cotal.${SPACE}.chat.local.alice.general`, "forged");
      await aliceThere.flush();
      seatThere.publish(`cotal.${SPACE}.chat.local.seat_two.general`, "marker");
      await seatThere.flush();
      await until(() => got.some((g) => g.endsWith("marker")), 10_000, "the seat's post to reach the hub");
      expect(got.filter((g) => g.includes("forged"))).toEqual([]);
    } finally {
      await aliceThere.close();
      await seatThere.close();
    }
  });

  test("revoking the leaf revokes what was minted through it: its seats' live connections are cut", async () => {
    const nc = await leafClient();
    const seat = await callControl(nc, SPACE, "mint", hostb, mintArgs("seat_three"));
    // The mint remade the leaf's connection: the next waits until it carries the seat.
    await carried(localPrincipal("seat_three"));
    const file = join(dir, "seat_three.creds");
    const { fmtCreds } = await import("@nats-io/jwt");
    const kp = createUser();
    const again = await callControl(nc, SPACE, "mint", hostb, { ...mintArgs("seat_three"), userPub: kp.getPublicKey() });
    writeFileSync(file, fmtCreds(again.jwt, kp));
    expect(seat.principal).toBe("local.seat_three");
    const live = await mesh.connection(file, "_INBOX.local.seat_three");
    const cut = closedFlag(live);
    const cli = await mesh.connection(mesh.cliCreds);
    const r = await requestRevoke(cli, SPACE, "hostb_leaf");
    // the leaf's own credential, and every credential minted through it (seat_one, seat_two, seat_three twice)
    expect(r.revoked).toBeGreaterThanOrEqual(5);
    await until(() => cut(), 5_000, "seat_three's connection to be cut by the leaf's revocation");
    await expect(mesh.connection(file, "_INBOX.local.seat_three")).rejects.toThrow();
  });
});

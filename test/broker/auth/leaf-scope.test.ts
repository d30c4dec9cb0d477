// Leaf scope: a leaf host may act only as the identities that run there. Its
// scope (broker/auth/leaf-scope.ts) follows the host: a seat minted through the leaf widens it, a
// revoked or expired one leaves it, asking for the same seat again changes nothing, and past its
// bound a mint is refused before anything is signed. Black-box: a real operator-mode server, the
// leaf credential used as an ordinary client (as whoever holds it could), raw NATS clients.
import { Kvm } from "@nats-io/kv";
import { createUser } from "@nats-io/nkeys";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, onTestFailed, test } from "vitest";
import { callControl, ControlCallError, leafPermissions, SERVICE_PRINCIPALS, setLogDestination } from "../../../broker/internal.js";
import { beatSubject, localPrincipal, names, principalId, type Principal } from "../../../schemas/index.js";
import { dumpLogsOnFailure } from "../../harness/fixtures.js";
import { TestMesh } from "../../harness/mesh.js";
import { startStaticServer } from "../../harness/mesh-mode.js";
import type { NatsServer } from "../../../testbed/nats-server.js";
import { refusals } from "../../harness/refusals.js";
import { until } from "../../../testbed/until.js";

const SPACE = "leafscope";
const hostb = localPrincipal("hostb");
const leaf = localPrincipal("hostb_leaf");
const servers: NatsServer[] = [];
const meshes: TestMesh[] = [];

// The probes send empty beats, which the mesh service drops with a warning each: kept out of the output.
beforeAll(() => setLogDestination({ write: () => undefined }));

afterAll(async () => {
  for (const m of meshes) await m.close();
  for (const s of servers) await s.cleanup();
});

/** A mesh on a server of its own, with the host's leaf and manager minted. */
async function meshWith(space: string, opts: Parameters<typeof TestMesh.start>[2] = {}): Promise<{ mesh: TestMesh; leafCreds: string }> {
  const server = await startStaticServer();
  servers.push(server);
  // On a failure, the server's log (`startStaticServer({ config: "debug: true" })` adds each connection's life).
  dumpLogsOnFailure({ onTestFailed }, `nats-server ${server.url}`, () => server.logs());
  const mesh = await TestMesh.start(server, space, { leafNarrowDelayMs: 200, ...opts });
  meshes.push(mesh);
  const leafCreds = await mesh.mint({ name: "hostb_leaf", profile: "leaf" });
  await mesh.mint({ name: "hostb", profile: "manager" });
  return { mesh, leafCreds };
}

/**
 * How long a probe's handshake may take (leafMay). A widened or narrowed scope reaches the server
 * as a new account JWT, and the server closes every connection of the leaf's signing key, one in
 * its handshake too (a debug log: authenticated, then closed "Authentication Failure" under 1 ms
 * later, as the update landed). nats.js takes only "Authorization Violation" for a failed connect:
 * after any other close in the handshake it waits out its dial timeout (20 s by default; checked
 * against a socket that answers CONNECT so), longer than a probe's whole wait: 1 run in 40 failed
 * on a loaded machine. 3 s fails such a probe and the wait probes again; a connect here takes ms.
 * The mint and revoke calls are not retried, so they keep nats.js's default.
 */
const LEAF_PROBE_DIAL_MS = 3_000;

/** The leaf credential as a client acting as `as`, replying on its inbox. */
function leafAs(mesh: TestMesh, creds: string, as: Principal, dialTimeoutMs?: number): Promise<NatsConnection> {
  return mesh.connection(creds, `_INBOX.${principalId(as)}`, dialTimeoutMs);
}

/** Mint `name` as the host's manager, through the leaf (its connection stamps the call as the leaf's). */
async function mintThroughLeaf(mesh: TestMesh, creds: string, name: string, extra: Record<string, unknown> = {}) {
  const nc = await leafAs(mesh, creds, hostb);
  try {
    return await callControl(nc, mesh.space, "mint", hostb, {
      name,
      profile: "agent",
      allowSubscribe: ["general"],
      allowPublish: ["general"],
      userPub: createUser().getPublicKey(),
      ...extra,
    });
  } finally {
    await nc.close();
  }
}

/** Whether the broker lets the leaf publish on, or subscribe to, `subject` now (a fresh connection: the scope of its connect). */
async function leafMay(mesh: TestMesh, creds: string, op: "publish" | "subscription", subject: string): Promise<boolean> {
  const nc = await leafAs(mesh, creds, hostb, LEAF_PROBE_DIAL_MS);
  try {
    const refused = refusals(nc);
    if (op === "publish") nc.publish(subject, "{}");
    else nc.subscribe(subject);
    return !(await refused(op, subject));
  } finally {
    await nc.close();
  }
}

const leafMayPublish = (mesh: TestMesh, creds: string, subject: string) => leafMay(mesh, creds, "publish", subject);
const leafMaySubscribe = (mesh: TestMesh, creds: string, subject: string) => leafMay(mesh, creds, "subscription", subject);

/** Mint as the operator, for the leaf host (`cotal mint … --on hostb`). */
async function mintForHost(mesh: TestMesh, args: Record<string, unknown>) {
  const cli = await mesh.connection(mesh.cliCreds);
  try {
    return await callControl(cli, mesh.space, "mint", SERVICE_PRINCIPALS.cli, {
      allowSubscribe: [],
      allowPublish: [],
      leaf: principalId(leaf),
      userPub: createUser().getPublicKey(),
      ...args,
    } as never);
  } finally {
    await cli.close();
  }
}

/** Whether the broker lets the leaf send `who`'s liveness beat now. */
function leafMayActAs(mesh: TestMesh, creds: string, who: Principal): Promise<boolean> {
  return leafMayPublish(mesh, creds, beatSubject(mesh.space, who));
}

describe("a leaf's scope follows what its host runs", () => {
  test("a seat minted through it widens it (leafReconnect); the same request again does not; revoked, it leaves", async () => {
    const { mesh, leafCreds } = await meshWith(SPACE);
    const seat = localPrincipal("seat_a");
    expect(await leafMayActAs(mesh, leafCreds, seat)).toBe(false);
    const first = await mintThroughLeaf(mesh, leafCreds, "seat_a");
    expect(first.leafReconnect).toBe(true);
    await until(() => leafMayActAs(mesh, leafCreds, seat), 15_000, "the leaf to act as its new seat");
    // A renewal asks the same again: nothing to widen, no remake.
    expect((await mintThroughLeaf(mesh, leafCreds, "seat_a")).leafReconnect).toBeUndefined();
    // A seat with other rights is a change: its channels are part of the scope.
    expect((await mintThroughLeaf(mesh, leafCreds, "seat_a", { allowPublish: ["general", "builds"] })).leafReconnect).toBe(true);
    const builds = `cotal.${mesh.space}.chat.${principalId(seat)}.builds`;
    await until(() => leafMayPublish(mesh, leafCreds, builds), 15_000, "the leaf to post as its seat on its new channel");
    const nc = await leafAs(mesh, leafCreds, hostb);
    await callControl(nc, mesh.space, "revoke", hostb, { name: "seat_a" });
    await nc.close();
    await until(async () => !(await leafMayActAs(mesh, leafCreds, seat)), 15_000, "the leaf to lose its revoked seat");
    expect(JSON.stringify(mesh.store.leafScopes(mesh.space)[principalId(leaf)])).not.toContain("seat_a");
    // Its host's manager stays in it.
    expect(await leafMayActAs(mesh, leafCreds, hostb)).toBe(false); // a manager sends no beat…
    expect(JSON.stringify(mesh.store.leafScopes(mesh.space)[principalId(leaf)])).toContain(`managers_${mesh.space}.hostb`); // …but its heartbeat
  });

  test("a seat's own rights, no wider: its channels, its event plane only if it writes one", async () => {
    const { mesh, leafCreds } = await meshWith(`${SPACE}5`);
    const quiet = localPrincipal("quiet");
    await mintThroughLeaf(mesh, leafCreds, "quiet", { events: false });
    await until(() => leafMayActAs(mesh, leafCreds, quiet), 15_000, "the leaf to act as its seat");
    expect(await leafMayPublish(mesh, leafCreds, `cotal.${mesh.space}.chat.${principalId(quiet)}.general`)).toBe(true);
    expect(await leafMayPublish(mesh, leafCreds, `cotal.${mesh.space}.chat.${principalId(quiet)}.builds`)).toBe(false);
    expect(await leafMayPublish(mesh, leafCreds, `cotal.${mesh.space}.events.${principalId(quiet)}`)).toBe(false);
    // The same seat asked again with its plane (a seat spawned without --no-events): its rights grow, and the leaf's with them.
    expect((await mintThroughLeaf(mesh, leafCreds, "quiet", { events: true })).leafReconnect).toBe(true);
    await until(() => leafMayPublish(mesh, leafCreds, `cotal.${mesh.space}.events.${principalId(quiet)}`), 15_000, "the leaf to write its seat's plane");
  });

  test("a reader and an observer minted for the host (mint --on): the leaf may read what they may", async () => {
    const { mesh, leafCreds } = await meshWith(`${SPACE}6`);
    const general = `cotal.${mesh.space}.chat.*.*.general`;
    const everything = `cotal.${mesh.space}.chat.>`;
    expect(await leafMaySubscribe(mesh, leafCreds, general)).toBe(false);
    expect((await mintForHost(mesh, { name: "watcher", profile: "reader", allowSubscribe: ["general"] })).leafReconnect).toBe(true);
    await until(() => leafMaySubscribe(mesh, leafCreds, general), 15_000, "the leaf to read what its reader reads");
    expect(await leafMaySubscribe(mesh, leafCreds, everything)).toBe(false);
    expect((await mintForHost(mesh, { name: "olga", profile: "observer" })).leafReconnect).toBe(true);
    await until(() => leafMaySubscribe(mesh, leafCreds, everything), 15_000, "the leaf to read what its observer reads");
  });

  test("a renewed seat keeps its place: asking again, even in another order or after the first credential expired, remakes nothing", async () => {
    const { mesh, leafCreds } = await meshWith(`${SPACE}7`);
    // Long enough for seat_b's widening to count it live; expired before it is renewed.
    const first = await mintThroughLeaf(mesh, leafCreds, "seat_a", { expiresInMs: 4_000 });
    // Each widening remakes the leaf's connection: the next mint waits until the hub carries it.
    await until(() => leafMayActAs(mesh, leafCreds, localPrincipal("seat_a")), 15_000, "the leaf to act as seat_a");
    expect((await mintThroughLeaf(mesh, leafCreds, "seat_b")).leafReconnect).toBe(true);
    await until(() => leafMayActAs(mesh, leafCreds, localPrincipal("seat_b")), 15_000, "the leaf to act as seat_b");
    expect(JSON.stringify(mesh.store.leafScopes(mesh.space))).toContain("seat_b"); // its widening is done…
    await until(() => Date.now() > first.expiresAt!, 8_000, "seat_a's first credential to expire");
    // seat_a renewed after seat_b: the index lists them the other way round now; the scope is the same.
    expect((await mintThroughLeaf(mesh, leafCreds, "seat_a")).leafReconnect).toBeUndefined();
    expect((await mintThroughLeaf(mesh, leafCreds, "seat_c")).leafReconnect).toBe(true);
    await until(() => leafMayActAs(mesh, leafCreds, localPrincipal("seat_c")), 15_000, "the leaf to act as seat_c");
    // seat_a holds one expired credential and one live: it stays.
    expect(await leafMayActAs(mesh, leafCreds, localPrincipal("seat_a"))).toBe(true);
  });

  test("an expired seat leaves it at the next change", async () => {
    const { mesh, leafCreds } = await meshWith(`${SPACE}2`);
    // Long enough for its widening to count it live under load; expired before the next change.
    const brief = await mintThroughLeaf(mesh, leafCreds, "brief", { expiresInMs: 4_000 });
    await until(() => leafMayActAs(mesh, leafCreds, localPrincipal("brief")), 15_000, "the leaf to act as the brief seat");
    await until(() => Date.now() > brief.expiresAt!, 8_000, "the brief seat's credential to expire");
    expect((await mintThroughLeaf(mesh, leafCreds, "lasting")).leafReconnect).toBe(true);
    await until(() => leafMayActAs(mesh, leafCreds, localPrincipal("lasting")), 15_000, "the leaf to act as the lasting seat");
    expect(await leafMayActAs(mesh, leafCreds, localPrincipal("brief"))).toBe(false);
  });

  test("at start, the mesh service names a leaf credential minted before leaf scopes (it still has the old wide rights)", async () => {
    const { mesh } = await meshWith(`${SPACE}4`);
    // An older Cotal's record of a leaf: a live credential, not signed with a scoped key.
    const kv = await new Kvm(mesh.serviceConnection).open(names.membersBucket(mesh.space));
    const old = { profile: "leaf", allowSubscribe: [], allowPublish: [], users: [{ pub: createUser().getPublicKey(), issuedAt: 1 }] };
    await kv.put("id.local.oldhost_leaf", JSON.stringify(old));
    const lines: string[] = [];
    setLogDestination({ write: (l: string) => void lines.push(l) });
    try {
      await mesh.service.stop();
      await mesh.startService();
      await until(() => lines.some((l) => l.includes("minted before leaf scopes")), 10_000, "the warning");
    } finally {
      setLogDestination({ write: () => undefined });
    }
    const warned = lines.filter((l) => l.includes("minted before leaf scopes")).map((l) => JSON.parse(l) as { leaf: string; remedy: string });
    // The leaf minted now is scoped: only the old one is named, with the fix.
    expect(warned).toEqual([{ ...warned[0], leaf: "local.oldhost_leaf", remedy: expect.stringContaining("cotal mint oldhost_leaf --profile leaf --replace") }]);
  });

  test("past its bound a mint through the leaf is refused, naming it; nothing is minted", async () => {
    // Room for exactly one seat: the bound is the scope's size with it.
    const space = `${SPACE}3`;
    const one = { space, who: localPrincipal("just_fits"), profile: "agent" as const, allowSubscribe: ["general"], allowPublish: ["general"] };
    const bound = JSON.stringify({ [principalId(leaf)]: leafPermissions(space, leaf, [one]) }).length;
    const { mesh, leafCreds } = await meshWith(space, { mintLimits: { leafScopesBytes: bound } });
    expect((await mintThroughLeaf(mesh, leafCreds, "just_fits")).leafReconnect).toBe(true);
    await until(() => leafMayActAs(mesh, leafCreds, localPrincipal("just_fits")), 15_000, "the leaf to act as the seat that fits");
    const err = await mintThroughLeaf(mesh, leafCreds, "one_too_many").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ControlCallError);
    expect((err as ControlCallError).code).toBe("leaf-scope-full");
    expect((err as ControlCallError).message).toContain(`more than the ${bound}`);
    expect(await leafMayActAs(mesh, leafCreds, localPrincipal("one_too_many"))).toBe(false);
    const cli = await mesh.connection(mesh.cliCreds);
    expect(await callControl(cli, mesh.space, "grant", SERVICE_PRINCIPALS.cli, { name: "local.one_too_many" })).toMatchObject({ minted: false });
    await cli.close();
  });
});

import { readdirSync, statSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { jetstream, jetstreamManager, AckPolicy } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { callControl, permissionViolation, requestRevoke, setLogDestination, type Endpoint } from "../../broker/index.js";
import { chatSubject, dmSubject, anycastSubject, encodeMessage, localPrincipal, type CotalMessage } from "../../schemas/index.js";
import { TestMesh } from "../harness/mesh.js";
import { until } from "../../testbed/until.js";
import { collect } from "../harness/deliveries.js";

const SPACE = "sec";
const alice = localPrincipal("alice");
const bob = localPrincipal("bob");
const logs: string[] = [];

let mesh: TestMesh;
let aliceEp: Endpoint;
let bobEp: Endpoint;
let malloryCreds: string;

const savedLevel = process.env.COTAL_LOG_LEVEL;
beforeAll(async () => {
  process.env.COTAL_LOG_LEVEL = "debug"; // every log line the services write is checked for secrets
  setLogDestination({ write: (line: string) => void logs.push(line) });
  mesh = await TestMesh.startStatic(SPACE);
  const channels = { allowSubscribe: ["general", "events.local.alice"], allowPublish: ["general"] };
  aliceEp = await mesh.endpoint("alice", { creds: await mesh.mint({ name: "alice", profile: "agent", ...channels }) });
  bobEp = await mesh.endpoint("bob", { creds: await mesh.mint({ name: "bob", profile: "agent", ...channels, role: "reviewer" }), role: "reviewer" });
  await aliceEp.join();
  await bobEp.join();
  malloryCreds = await mesh.mint({ name: "mallory", profile: "agent", allowSubscribe: ["general"], allowPublish: ["general"] });
});

afterAll(async () => {
  process.env.COTAL_LOG_LEVEL = savedLevel;
  setLogDestination(undefined);
  await mesh?.close();
});

/**
 * Expect the broker to refuse an operation with its permission error (nats.js's
 * PermissionViolationError, for publish or subscribe). A timeout or "no responders" is no
 * refusal: it would pass just as well if the request were lost or the service down.
 */
async function refused(op: () => Promise<unknown>): Promise<void> {
  const err = await op().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err, "the broker allowed the operation").toBeDefined();
  const denied = permissionViolation(err);
  expect(denied, `expected the broker's permission error, got: ${String(err)} (cause: ${String((err as Error).cause)})`).toBeDefined();
}

function message(from: string, address: Partial<CotalMessage>, text = "forged"): CotalMessage {
  return {
    id: `m-${Math.random().toString(36).slice(2)}`,
    ts: Date.now(),
    space: SPACE,
    from: { id: from, name: from.split(".")[1]! },
    parts: [{ kind: "text", text }],
    ...address,
  } as CotalMessage;
}

async function storedOn(subject: string): Promise<number> {
  const jsm = await mesh.dataJsm();
  const stream = await jsm.streams.find(subject);
  const info = await jsm.streams.info(stream, { subjects_filter: subject });
  return info.state.subjects?.[subject] ?? 0;
}

/**
 * How many messages a subscription on `subject` gets from `trigger` (a refused subscription gets
 * none). Waits for `atLeast` of them; then a ping on the same connection proves nothing else is
 * on its way: the trigger resolved once the broker had routed its message, and the broker sends
 * the pong after everything it routed to this connection before. A count, never a fixed wait.
 */
async function receives(nc: NatsConnection, subject: string, trigger: () => Promise<unknown>, atLeast = 0): Promise<number> {
  let n = 0;
  const sub = nc.subscribe(subject, { callback: (err, msg) => void (!err && msg && n++) });
  await nc.flush(); // the subscription is in place (or refused) before the trigger
  await trigger();
  if (atLeast > 0) await until(() => n >= atLeast, 5_000, `${atLeast} message(s) on ${subject}`);
  await nc.flush();
  sub.unsubscribe();
  return n;
}

describe("who may connect", () => {
  test("a client without credentials is refused", async () => {
    await expect(mesh.connection()).rejects.toThrow(/Authorization Violation/);
  });

  test("an expired credential is refused", async () => {
    const creds = await mesh.mint({ name: "shortlived", profile: "agent", expiresInMs: 3_000 });
    await (await mesh.connection(creds)).close(); // valid until it expires
    const refusedNow = () =>
      mesh.connection(creds).then(
        (nc) => nc.close().then(() => false),
        (err: unknown) => /Authorization Violation|expired/i.test(String(err)),
      );
    await until(refusedNow, 10_000, "the broker to refuse the expired credential");
  });

  test("revoking an identity cuts its live connection and refuses new ones", async () => {
    const creds = await mesh.mint({ name: "leaver", profile: "agent" });
    const nc = await mesh.connection(creds, "_INBOX.local.leaver");
    let closed = false;
    void nc.closed().then(() => (closed = true));
    const cli = await mesh.connection(mesh.cliCreds);
    expect(await requestRevoke(cli, SPACE, "leaver")).toEqual({ principal: "local.leaver", revoked: 1 });
    await until(() => closed, 5_000, "the revoked identity's connection is closed");
    await expect(mesh.connection(creds)).rejects.toThrow(/Authorization Violation/);
  });
});

describe("forgery is refused by the broker and nothing is stored", () => {
  test.each([
    ["a channel post", () => chatSubject(SPACE, alice, "general"), () => message("local.alice", { channel: "general" })],
    ["a DM", () => dmSubject(SPACE, bob, alice), () => message("local.alice", { to: "local.bob" })],
    ["an anycast", () => anycastSubject(SPACE, "reviewer", alice), () => message("local.alice", { toService: "reviewer" })],
  ])("%s with another principal's sender tokens", async (_what, subject, msg) => {
    const nc = await mesh.connection(malloryCreds, "_INBOX.local.mallory");
    await refused(() => jetstream(nc).publish(subject(), encodeMessage(msg()), { timeout: 1_500 }));
    expect(await storedOn(subject())).toBe(0);
  });
});

describe("an agent reads only what it was granted", () => {
  test("a channel outside allowSubscribe: no live posts, no history, no membership", async () => {
    const eveCreds = await mesh.mint({ name: "eve", profile: "agent", allowSubscribe: ["lobby"] });
    const nc = await mesh.connection(eveCreds, "_INBOX.local.eve");
    expect(await receives(nc, "cotal.sec.chat.*.*.general", () => aliceEp.send("general", "not for eve"))).toBe(0);
    const eve = await mesh.endpoint("eve", { creds: eveCreds });
    await expect(eve.history("general")).rejects.toThrow(/read-denied|Not allowed to read channel general/);
    await eve.join();
    await expect(eve.joinChannel("general")).rejects.toThrow(/Not allowed to read channel general/);
  });

  test("another agent's DMs by any route: subscribe, consumer create, direct get, message get, binding its durable", async () => {
    await aliceEp.dm("bob", "private to bob");
    const nc = await mesh.connection(malloryCreds, "_INBOX.local.mallory");
    expect(await receives(nc, "cotal.sec.inst.local.bob.>", () => aliceEp.dm("bob", "still private"))).toBe(0);
    const jsm = await jetstreamManager(nc, { checkAPI: false, timeout: 1_500 });
    await refused(() => jsm.consumers.add("DM_sec", { durable_name: "snoop", ack_policy: AckPolicy.Explicit, filter_subject: "cotal.sec.inst.local.bob.>" }));
    await refused(() => jsm.consumers.add("DM_sec", { ack_policy: AckPolicy.None, filter_subject: "cotal.sec.inst.local.bob.>" }));
    await refused(() => nc.request("$JS.API.DIRECT.GET.DM_sec", JSON.stringify({ seq: 1 }), { timeout: 1_500 }));
    await refused(() => jsm.streams.getMessage("DM_sec", { seq: 1 }));
    await refused(async () => {
      const c = await jetstream(nc, { timeout: 1_500 }).consumers.get("DM_sec", "dm_local-bob");
      return c.next({ expires: 1_000 });
    });
  });

  test("another agent's presence key cannot be written", async () => {
    const nc = await mesh.connection(malloryCreds, "_INBOX.local.mallory");
    await refused(() => jetstream(nc).publish("$KV.cotal_presence_sec.local.bob", "{}", { timeout: 1_500 }));
  });

  test("whoami tells a credential only about itself: asked as another name, the broker refuses", async () => {
    const nc = await mesh.connection(malloryCreds, "_INBOX.local.mallory");
    expect(await callControl(nc, SPACE, "whoami", localPrincipal("mallory"))).toEqual({ principal: "local.mallory", profile: "agent" });
    await refused(() => callControl(nc, SPACE, "whoami", alice, {}, { timeoutMs: 1_500 }));
  });

  test("streams and consumers cannot be created", async () => {
    const nc = await mesh.connection(malloryCreds, "_INBOX.local.mallory");
    const jsm = await jetstreamManager(nc, { checkAPI: false, timeout: 1_500 });
    await refused(() => jsm.streams.add({ name: "MINE", subjects: ["mine.>"] }));
    await refused(() => jsm.consumers.add("CHAT_sec", { durable_name: "mine", ack_policy: AckPolicy.Explicit }));
    await refused(() => jsm.consumers.add("CHAT_sec", { ack_policy: AckPolicy.None, filter_subject: "cotal.sec.chat.*.*.general" }));
    // and nothing was created behind the refusals
    const admin = await mesh.dataJsm();
    expect((await admin.streams.names().next()).filter((n) => n === "MINE")).toEqual([]);
    const chatConsumers = (await admin.consumers.list("CHAT_sec").next()).map((c) => c.name);
    expect(chatConsumers).not.toContain("mine");
    const dmConsumers = (await admin.consumers.list("DM_sec").next()).map((c) => c.name);
    expect(dmConsumers).not.toContain("snoop");
    expect(dmConsumers.every((n) => n.startsWith("dm_local-"))).toBe(true);
  });
});

describe("observer and admin views", () => {
  test("an observer sees channel posts and presence, no DM, and cannot publish", async () => {
    const creds = await mesh.mint({ name: "watchtower", profile: "observer" });
    const nc = await mesh.connection(creds, "_INBOX.local.watchtower");
    expect(await receives(nc, "cotal.sec.chat.>", () => aliceEp.send("general", "public"), 1)).toBe(1);
    expect(await receives(nc, "$KV.cotal_presence_sec.>", () => aliceEp.setPresence({ activity: "Bash" }), 1)).toBeGreaterThanOrEqual(1);
    expect(await receives(nc, "cotal.sec.inst.>", () => aliceEp.dm("bob", "not for observers"))).toBe(0);
    const w = localPrincipal("watchtower");
    await refused(() =>
      jetstream(nc).publish(chatSubject(SPACE, w, "general"), encodeMessage(message("local.watchtower", { channel: "general" })), { timeout: 1_500 }),
    );
  });

  test("an admin sees DMs and anycast, and can publish nothing", async () => {
    const creds = await mesh.mint({ name: "root_admin", profile: "admin" });
    const nc = await mesh.connection(creds, "_INBOX.local.root_admin");
    expect(await receives(nc, "cotal.sec.inst.>", () => aliceEp.dm("bob", "admin may read"), 1)).toBe(1);
    expect(await receives(nc, "cotal.sec.svc.>", () => aliceEp.anycast("reviewer", "admin sees asks"), 1)).toBe(1);
    const a = localPrincipal("root_admin");
    await refused(() => jetstream(nc).publish(dmSubject(SPACE, bob, a), encodeMessage(message("local.root_admin", { to: "local.bob" })), { timeout: 1_500 }));
  });

  test("observer scope is fixed: --allow-subscribe on an observer is refused with an explanation", async () => {
    await expect(mesh.mint({ name: "o2", profile: "observer", allowSubscribe: ["general"] })).rejects.toThrow(
      /fixed view.*scoped reader is `--profile reader`/,
    );
  });
});

describe("an agent minted with --allow-subscribe only (one agent's event plane)", () => {
  test("reads that channel's history and live posts and is refused everything else", async () => {
    await aliceEp.send("events.local.alice", "RUN_STARTED");
    const creds = await mesh.mint({ name: "watcher", profile: "agent", allowSubscribe: ["events.local.alice"], provision: true });
    const watcher = await mesh.endpoint("watcher", { creds: creds });
    expect((await watcher.history("events.local.alice")).map((h) => h.message.parts[0])).toEqual([{ kind: "text", text: "RUN_STARTED" }]);
    await watcher.join();
    const got = collect(watcher);
    await watcher.joinChannel("events.local.alice");
    await aliceEp.send("events.local.alice", "RUN_FINISHED");
    await until(() => got.texts().includes("RUN_FINISHED"), 5_000, "the watcher gets the live event");

    await expect(watcher.history("general")).rejects.toThrow(/Not allowed to read channel general/);
    await refused(() => watcher.send("general", "hi"));
    const nc = await mesh.connection(creds, "_INBOX.local.watcher");
    expect(await receives(nc, "cotal.sec.chat.*.*.general", () => aliceEp.send("general", "x"))).toBe(0);
    expect(await receives(nc, "cotal.sec.inst.>", () => aliceEp.dm("bob", "y"))).toBe(0);
  });
});

describe("secrets", () => {
  test("secret files are 0600 and folders 0700", () => {
    const walk = (dir: string): string[] =>
      readdirSync(dir).flatMap((f) => {
        const p = join(dir, f);
        return statSync(p).isDirectory() ? [p, ...walk(p)] : [p];
      });
    const root = mesh.store.dir;
    const paths = [root, ...walk(root)];
    expect(paths.length).toBeGreaterThan(8);
    for (const p of paths) {
      const mode = statSync(p).mode & 0o777;
      expect({ p, mode: mode.toString(8) }).toEqual({ p, mode: statSync(p).isDirectory() ? "700" : "600" });
    }
  });

  test("no seed or JWT appears in logs or the server's process arguments", () => {
    const seed = /\bS[OAU][A-Z2-7]{50,}/;
    const jwt = /eyJ[A-Za-z0-9_-]{10,}\.eyJ/;
    const text = logs.join("\n") + mesh.server.logs();
    expect(logs.length).toBeGreaterThan(0);
    expect(text).not.toMatch(seed);
    expect(text).not.toMatch(jwt);
    const cmdline = readFileSync(`/proc/${mesh.server.pid}/cmdline`, "utf8");
    expect(cmdline).not.toMatch(seed);
    expect(cmdline).not.toMatch(jwt);
  });
});

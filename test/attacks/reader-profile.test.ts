// "A scoped reader publishes nothing." A `reader` credential
// (`cotal mint watcher --profile reader --allow-subscribe 'events.local.alice,general' --provision`)
// tries every kind of write as an attacker would, over a raw NATS client on a real operator-mode
// server: a post, a DM, an anycast, its presence key, a beat, an event-plane frame, a seat-log
// record, a DM inbox, an upload and a mint. Each is refused by the broker and nothing is stored.
// The same attempts with an `agent` credential of the same scope (no --allow-publish: what a
// scoped reader used to be) go through for the DM, the anycast, the presence key, the beat, the
// inbox and the upload, so this test fails if the reader's permissions were an agent's. The mesh
// service holds the line too (a request the broker would let through is refused by the profile it
// minted the name with), and the reader still reads what it was minted for, and nothing else.
import { jetstream } from "@nats-io/jetstream";
import { createUser } from "@nats-io/nkeys";
import { PermissionViolationError, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { ControlCallError, JS_OPTIONS, jetStreamConnection, permissionViolation, requestControl, type Endpoint } from "../../broker/internal.js";
import {
  anycastSubject,
  beatSubject,
  chatSubject,
  decodeMessage,
  dmSubject,
  durables,
  eventsSubject,
  localPrincipal,
  messageText,
  names,
  principalId,
  seatSubject,
  type CotalMessage,
  type Principal,
} from "../../schemas/index.js";
import { TestMesh } from "../harness/mesh.js";
import { until } from "../../testbed/until.js";
import { expectUnchanged, snapshot } from "./state.js";
import { storeOutcome } from "./store-outcome.js";

const SPACE = "rdp";
const SCOPE = ["events.local.alice", "general"];
const ZERO_DIGEST = `sha256:${"0".repeat(64)}`;
let mesh: TestMesh;
let alice: Endpoint;

beforeAll(async () => {
  mesh = await TestMesh.startStatic(SPACE);
  alice = await mesh.joined("alice");
  await mesh.joined("bob");
});

afterAll(async () => {
  await mesh?.close();
});

function message(from: Principal, address: Partial<CotalMessage>): CotalMessage {
  return {
    id: `m-${Math.random().toString(36).slice(2)}`,
    ts: Date.now(),
    space: SPACE,
    from: { id: principalId(from), name: from.actor },
    parts: [{ kind: "text", text: "a reader's write" }],
    ...address,
  } as CotalMessage;
}

/** A minted identity's own raw connection (its inbox prefix), as an attacker holds it. */
async function holder(name: string, profile: "reader" | "agent"): Promise<{ who: Principal; nc: NatsConnection; creds: string }> {
  const creds = await mesh.mint({ name, profile, allowSubscribe: SCOPE, provision: true });
  const who = localPrincipal(name);
  return { who, creds, nc: await mesh.connection(creds, `_INBOX.${principalId(who)}`) };
}

/** The broker's permission refusals on a connection, so a core publish or subscription can be judged. */
function refusals(nc: NatsConnection): (op: "publish" | "subscription", subject: string) => Promise<boolean> {
  const seen: PermissionViolationError[] = [];
  void (async () => {
    for await (const s of nc.status()) if (s.type === "error" && s.error instanceof PermissionViolationError) seen.push(s.error);
  })();
  return async (op, subject) => {
    // A refusal arrives before the answer to a PING sent after the operation; the second round
    // trip lets the client hand that error on first.
    await nc.flush();
    await nc.flush();
    return seen.some((e) => e.operation === op && e.subject === subject);
  };
}

/** A control call's outcome: `refused` by the broker, `served`, or the service's error code. */
async function call(nc: NatsConnection, endpoint: string, command: string, as: Principal, args: Record<string, unknown> = {}): Promise<string> {
  try {
    await requestControl(nc, SPACE, endpoint, command, as, args, { timeoutMs: 5_000 });
    return "served";
  } catch (err) {
    if (permissionViolation(err)) return "refused";
    if (err instanceof ControlCallError) return err.code;
    throw err;
  }
}

/** Every write tried, by what it is: `refused` (the broker), `stored`, `sent` (a core publish taken), `served` or a service code. */
async function tryWrites(who: Principal, nc: NatsConnection): Promise<Record<string, string>> {
  const refused = refusals(nc);
  const me = principalId(who);
  const beat = beatSubject(SPACE, who);
  nc.publish(beat, JSON.stringify({ ts: Date.now() }));
  return {
    "a post on #general": await storeOutcome(nc, chatSubject(SPACE, who, "general"), message(who, { channel: "general" })),
    "a DM to bob": await storeOutcome(nc, dmSubject(SPACE, localPrincipal("bob"), who), message(who, { to: "local.bob" })),
    "an anycast to reviewer": await storeOutcome(nc, anycastSubject(SPACE, "reviewer", who), message(who, { toService: "reviewer" })),
    "its presence key": await storeOutcome(nc, `$KV.${names.presenceBucket(SPACE)}.${me}`, {
      card: { id: me, name: who.actor, kind: "agent", tags: [], meta: {} },
      status: "idle",
      ts: Date.now(),
      attention: "open",
      channelModes: {},
      channels: [],
    }),
    "its beat": (await refused("publish", beat)) ? "refused" : "sent",
    "a frame on its event plane": await storeOutcome(nc, eventsSubject(SPACE, who), message(who, { channel: `events.${me}` })),
    "a seat-log record": await storeOutcome(nc, seatSubject(SPACE, localPrincipal("s1"), who), {
      type: "requested",
      seat: "local.s1",
      manager: who.actor,
      ts: Date.now(),
    }),
    "a DM inbox (register)": await call(nc, "mesh", "register", who),
    "an upload (artifact-begin)": await call(nc, "artifact", "artifact-begin", who, { digest: ZERO_DIGEST, size: 1, name: "a.txt", mediaType: "text/plain" }),
    "a mint": await call(nc, "mesh", "mint", who, { name: `${who.actor}_seat`, profile: "agent", userPub: createUser().getPublicKey() }),
  };
}

/** How many messages a data-account stream holds on one subject. */
async function storedOn(stream: string, subject: string): Promise<number> {
  const info = await (await mesh.dataJsm()).streams.info(stream, { subjects_filter: subject });
  return info.state.subjects?.[subject] ?? 0;
}

describe("a reader publishes nothing", () => {
  test("every kind of write is refused by the broker and nothing is stored; the same attempts as an agent of the same scope go through", async () => {
    const { who, nc } = await holder("watcher", "reader");
    const before = await snapshot(mesh);
    const outcomes = await tryWrites(who, nc);
    expect(outcomes).toEqual(Object.fromEntries(Object.keys(outcomes).map((k) => [k, "refused"])));
    // Channels, DMs, anycasts, the seat log, identities and consumers: as they were.
    await expectUnchanged(mesh, before);
    expect(await storedOn(names.eventsStream(SPACE), eventsSubject(SPACE, who))).toBe(0);
    expect(await storedOn(`KV_${names.presenceBucket(SPACE)}`, `$KV.${names.presenceBucket(SPACE)}.${principalId(who)}`)).toBe(0);
    const roster = (await requestControl(await mesh.connection(mesh.cliCreds), SPACE, "mesh", "roster", localPrincipal("cotal_cli"))) as Array<{ id: string }>;
    expect(roster.map((r) => r.id)).not.toContain(principalId(who));

    // The attempts are real ones: an agent minted with the same scope and no --allow-publish (the
    // scoped reader of before) gets through with these, so a reader minted as it would fail above.
    const agent = await holder("quinn", "agent");
    const asAgent = await tryWrites(agent.who, agent.nc);
    expect(asAgent).toMatchObject({
      "a DM to bob": "stored",
      "an anycast to reviewer": "stored",
      "its presence key": "stored",
      "its beat": "sent",
      "a DM inbox (register)": "served",
      "an upload (artifact-begin)": "served",
    });
  });

  test("the mesh service refuses a reader every command but its reads, even when the broker lets the request through", async () => {
    await holder("watcher2", "reader");
    const reader = localPrincipal("watcher2");
    // The operator's tool may act as anyone, so the broker passes these: the service judges the name.
    const cli = await mesh.connection(mesh.cliCreds);
    const asReader = (endpoint: string, command: string, args: Record<string, unknown> = {}) =>
      requestControl(cli, SPACE, endpoint, command, reader, args, { timeoutMs: 5_000 });
    for (const [endpoint, command, args] of [
      ["mesh", "register", {}],
      ["mesh", "mint", { name: "watcher2_seat", profile: "agent", userPub: createUser().getPublicKey() }],
      ["mesh", "revoke", { name: "alice" }],
      ["artifact", "artifact-begin", { digest: ZERO_DIGEST, size: 1, name: "a.txt", mediaType: "text/plain" }],
    ] as const) {
      const err = await asReader(endpoint, command, args).catch((e: unknown) => e);
      expect(err, `${command} as a reader`).toBeInstanceOf(ControlCallError);
      expect((err as ControlCallError).code, command).toBe("not-allowed");
      expect((err as ControlCallError).message, command).toContain("is a reader");
    }
    // Its reads and its own memberships are served, within its scope only.
    expect(await asReader("mesh", "whoami")).toEqual({ principal: "local.watcher2", profile: "reader" });
    expect(await asReader("mesh", "join", { channel: "general" })).toMatchObject({ durable: durables.channel(reader, "general") });
    await expect(asReader("mesh", "join", { channel: "builds" })).rejects.toMatchObject({ code: "read-denied" });
  });
});

describe("a reader reads its scope", () => {
  test("history and live posts of its channel, through its durable membership too, and the event plane it was given; nothing outside", async () => {
    const { who, nc, creds } = await holder("viewer", "reader");
    const refused = refusals(nc);
    const live: string[] = [];
    const collect = (m: { data: Uint8Array }) => void live.push(messageText(decodeMessage(m.data)));
    nc.subscribe(`cotal.${SPACE}.chat.*.*.general`, { callback: (err, m) => void (!err && collect(m)) });
    nc.subscribe(eventsSubject(SPACE, localPrincipal("alice")), { callback: (err, m) => void (!err && collect(m)) });
    await nc.flush();

    await alice.send("general", "for the reader");
    await alice.send("events.local.alice", "RUN_STARTED");
    await until(() => live.includes("for the reader") && live.includes("RUN_STARTED"), 5_000, "the reader's live posts and frames");
    const history = async (channel: string) =>
      ((await requestControl(nc, SPACE, "mesh", "history", who, { channel })) as { items: Array<{ message: CotalMessage }> }).items.map((i) =>
        messageText(i.message),
      );
    expect(await history("general")).toContain("for the reader");
    expect(await history("events.local.alice")).toContain("RUN_STARTED");

    // --provision made its membership of #general (from the mint on): it pulls and acks it.
    const consumer = await jetstream(jetStreamConnection(nc, creds), JS_OPTIONS).consumers.get(names.chatStream(SPACE), durables.channel(who, "general"));
    const m = await consumer.next({ expires: 5_000 });
    expect(m && decodeMessage(m.data).parts).toEqual([{ kind: "text", text: "for the reader" }]);
    await m!.ackAck();

    // Outside its scope: no live subscription, no history, no membership.
    for (const subject of [`cotal.${SPACE}.chat.*.*.builds`, eventsSubject(SPACE, localPrincipal("bob")), `cotal.${SPACE}.inst.${principalId(who)}.>`]) {
      nc.subscribe(subject);
      expect(await refused("subscription", subject), subject).toBe(true);
    }
    await expect(requestControl(nc, SPACE, "mesh", "history", who, { channel: "builds" })).rejects.toMatchObject({ code: "read-denied" });
    await expect(requestControl(nc, SPACE, "mesh", "join", who, { channel: "builds" })).rejects.toMatchObject({ code: "read-denied" });
  });
});

import { jetstream } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { permissionViolation, StorageLimitError, type Endpoint } from "../../broker/index.js";
import {
  AGUI_FRAME_KIND,
  AGUI_PROTOCOL,
  chatSubject,
  encodeMessage,
  EVENT_PLANE,
  eventsSubject,
  frameOf,
  localPrincipal,
  names,
  type AgUiFrame,
  type CotalMessage,
} from "../../schemas/index.js";
import { TestMesh } from "../harness/mesh.js";

/**
 * The hole this closes: a credential minted with `--allow-subscribe` only (a scoped reader) published
 * frames on its own event plane, which lived in CHAT_, until an innocent post on #general was
 * refused. Now a scoped reader publishes nothing, and event planes live in their own stream
 * (EVENTS_) with a rolling window per actor, so no plane can starve channels (or other planes).
 * Black-box: a real operator-mode server, minted credentials, raw NATS clients.
 */
const SPACE = "rdr";
const MIB = 1024 ** 2;
let mesh: TestMesh;
let alice: Endpoint;
let bob: Endpoint;

beforeAll(async () => {
  // Small stores, so a flood reaches their limits quickly: 2 MiB of channel posts, and room for
  // one actor's whole window of the largest frames (1,000 × 64 KiB) plus a little.
  mesh = await TestMesh.startStatic(SPACE, { limits: { chatBytes: 2 * MIB, eventsBytes: 80 * MIB } });
  // Seats: agent credentials that may post (the test mesh mints them for its channels).
  alice = await mesh.joined("alice");
  bob = await mesh.joined("bob");
});

afterAll(async () => {
  await mesh?.close();
});

let n = 0;
function frame(seq: number, bytes = 200): AgUiFrame {
  return {
    kind: AGUI_FRAME_KIND,
    protocol: AGUI_PROTOCOL,
    threadId: "session-1",
    runId: "run-1",
    epoch: 1,
    seq,
    events: [{ type: "TEXT_MESSAGE_CONTENT", messageId: "m1", delta: "x".repeat(bytes) }],
  };
}

function envelope(from: string, channel: string, parts: CotalMessage["parts"]): CotalMessage {
  return { id: `m-${n++}-${Math.random().toString(36).slice(2)}`, ts: Date.now(), space: SPACE, from: { id: `local.${from}`, name: from }, channel, parts };
}

async function storedOn(subject: string): Promise<number> {
  const jsm = await mesh.dataJsm();
  let total = 0;
  for (const stream of [names.chatStream(SPACE), names.eventsStream(SPACE)]) {
    const info = await jsm.streams.info(stream, { subjects_filter: subject });
    total += info.state.subjects?.[subject] ?? 0;
  }
  return total;
}

async function refusedByBroker(op: () => Promise<unknown>): Promise<void> {
  const err = await op().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err, "the broker allowed the publish").toBeDefined();
  expect(permissionViolation(err), `the broker's permission refusal, got: ${String(err)} (cause: ${String((err as Error).cause)})`).toBeDefined();
}

describe("a scoped reader publishes nothing", () => {
  test("no frame on its own plane (old channel or new subject), none on another's, no post anywhere; it still reads the plane it was given", async () => {
    const watcherCreds = await mesh.mint({ name: "watcher", profile: "agent", allowSubscribe: ["events.local.alice"], provision: true });
    const nc = await mesh.connection(watcherCreds, "_INBOX.local.watcher");
    const me = localPrincipal("watcher");
    const attempts: Array<[string, string]> = [
      [eventsSubject(SPACE, me), "events.local.watcher"],
      [chatSubject(SPACE, me, "events.local.watcher"), "events.local.watcher"],
      [eventsSubject(SPACE, localPrincipal("alice")), "events.local.alice"],
      [chatSubject(SPACE, me, "events.local.alice"), "events.local.alice"],
      [chatSubject(SPACE, me, "general"), "general"],
    ];
    for (const [subject, channel] of attempts) {
      const body = encodeMessage(envelope("watcher", channel, [frame(1)]));
      await refusedByBroker(() => jetstream(nc).publish(subject, body, { timeout: 1_500 }));
      expect(await storedOn(subject), subject).toBe(0);
    }
    // Through the endpoint, as a connector would write its plane: refused by the broker too.
    const watcher = await mesh.endpoint("watcher", { creds: watcherCreds });
    const err = await watcher.post("events.local.watcher", [frame(1)], { id: "agui-w-1" }).catch((e: unknown) => e);
    expect(permissionViolation(err), String(err)).toBeDefined();

    // What it was minted for still works: alice's plane, by history and live.
    await alice.post("events.local.alice", [frame(1)], { id: "agui-a-1" });
    expect((await watcher.history("events.local.alice")).map((h) => frameOf(h.message.parts)?.seq)).toEqual([1]);
  });
});

describe("event planes have their own storage, bounded per actor", () => {
  test("a flood on one actor's plane keeps only its newest frames and never makes a #general post (or another plane's frame) fail", async () => {
    const flooder = await mesh.joined("mallory");
    const big = EVENT_PLANE.maxFrameBytes - 4 * 1024;
    // Its whole window and then some, of the largest frames the stream takes (~76 MiB sent, more
    // than CHAT_'s 2 MiB many times over): the oldest leave, nothing is refused.
    const total = EVENT_PLANE.framesPerActor + 150;
    for (let seq = 1; seq <= total; seq++) await flooder.post("events.local.mallory", [frame(seq, big)], { id: `agui-flood-${seq}` });
    const plane = eventsSubject(SPACE, localPrincipal("mallory"));
    expect(await storedOn(plane)).toBe(EVENT_PLANE.framesPerActor);
    const oldest = await flooder.history("events.local.mallory", { limit: EVENT_PLANE.framesPerActor });
    expect(frameOf(oldest[0]!.message.parts)?.seq).toBe(total - EVENT_PLANE.framesPerActor + 1);
    expect(frameOf(oldest.at(-1)!.message.parts)?.seq).toBe(total);

    // Channels and other planes are untouched by it.
    const post = await bob.send("general", "an innocent post");
    expect(post.seq).toBeGreaterThan(0);
    const theirs = await bob.post("events.local.bob", [frame(1)], { id: "agui-b-1" });
    expect(theirs.seq).toBeGreaterThan(0);
  });

  test("a frame larger than the plane takes is refused with the limit named; a post on #general is not affected", async () => {
    const err = await alice.post("events.local.alice", [frame(2, EVENT_PLANE.maxFrameBytes)], { id: "agui-a-huge" }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StorageLimitError);
    expect((err as StorageLimitError).message).toContain(names.eventsStream(SPACE));
    expect((err as StorageLimitError).message).toContain(`${EVENT_PLANE.maxFrameBytes} bytes`);
    expect((await alice.send("general", "still here")).seq).toBeGreaterThan(0);
  });

  test("nobody writes another's plane: a post on bob's plane name is refused before anything is sent", async () => {
    await expect(alice.post("events.local.bob", [frame(1)], { id: "agui-x-1" })).rejects.toMatchObject({ code: "not-own-plane" });
    await expect(alice.send("events.local.bob", "hi")).rejects.toMatchObject({ code: "not-own-plane" });
  });
});

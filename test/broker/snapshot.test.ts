// JetStream's own snapshot and restore, as broker/snapshot.ts speaks it (what `cotal backup` and
// `cotal restore` run on), against a real nats-server: a work-queue stream with a durable consumer
// that has handed out and acked one message comes back with the other two still waiting for that
// consumer, which delivers the next one, not the acked one. Restoring over an existing stream and
// snapshotting a missing one are refused with typed errors.
import { randomBytes } from "node:crypto";
import { AckPolicy, jetstream, jetstreamManager, RetentionPolicy, StorageType } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { restoreStream, snapshotStream, StreamRestoreError, StreamSnapshotError } from "../../broker/index.js";
import { NatsServer } from "../../testbed/nats-server.js";

let server: NatsServer;
let nc: NatsConnection;

beforeEach(async () => {
  server = await NatsServer.start();
  nc = await connect({ servers: server.url });
});
afterEach(async () => {
  await nc.close();
  await server.cleanup();
});

async function* chunksOf(parts: Uint8Array[]): AsyncIterable<Uint8Array> {
  for (const p of parts) yield p;
}

describe("stream snapshot and restore", () => {
  it("a stream comes back with its messages and its consumer's delivery state", async () => {
    const jsm = await jetstreamManager(nc);
    const js = jetstream(nc);
    await jsm.streams.add({ name: "DM_t", subjects: ["t.>"], retention: RetentionPolicy.Workqueue, storage: StorageType.File });
    // Bodies that do not compress away: every server's snapshot of them is several small chunks.
    const bodies = [1, 2, 3].map((i) => `m${i} ${randomBytes(1536).toString("hex")}`);
    for (const [i, body] of bodies.entries()) await js.publish(`t.${i + 1}`, body);
    await jsm.consumers.add("DM_t", { durable_name: "dm_alice", ack_policy: AckPolicy.Explicit });
    const first = await (await js.consumers.get("DM_t", "dm_alice")).next({ expires: 5_000 });
    expect(first?.string()).toBe(bodies[0]);
    await first!.ackAck();

    const parts: Uint8Array[] = [];
    let written = 0;
    // Small chunks: the snapshot arrives in several, each acknowledged before the next is taken.
    const meta = await snapshotStream(nc, "DM_t", async (c) => void parts.push(c.slice()), { onChunk: (b) => (written += b), chunkBytes: 1024 });
    expect(meta.config.name).toBe("DM_t");
    expect(meta.state).toMatchObject({ messages: 2, consumer_count: 1 });
    expect(parts.length).toBeGreaterThan(1);
    expect(written).toBe(parts.reduce((n, p) => n + p.length, 0));

    await jsm.streams.delete("DM_t");
    let restored = 0;
    const info = await restoreStream(nc, meta, chunksOf(parts), { onChunk: (b) => (restored += b) });
    expect(restored).toBe(written);
    expect(info.state.messages).toBe(2);
    const ci = await jsm.consumers.info("DM_t", "dm_alice");
    expect(ci.num_pending).toBe(2);
    expect(ci.ack_floor.stream_seq).toBe(1);
    const next = await (await js.consumers.get("DM_t", "dm_alice")).next({ expires: 5_000 });
    expect(next?.string()).toBe(bodies[1]);
  });

  it("restoring over a stream that exists, or a snapshot of one that does not, is refused with a typed error", async () => {
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({ name: "CHAT_t", subjects: ["c.>"], storage: StorageType.File });
    const parts: Uint8Array[] = [];
    const meta = await snapshotStream(nc, "CHAT_t", async (c) => void parts.push(c.slice()));
    const over = await restoreStream(nc, meta, chunksOf(parts)).catch((e: unknown) => e);
    expect(over).toBeInstanceOf(StreamRestoreError);
    expect((over as Error).message).toMatch(/Restoring stream CHAT_t failed: .*already in use/i);
    const missing = await snapshotStream(nc, "NOPE_t", async () => undefined).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(StreamSnapshotError);
    expect((missing as Error).message).toMatch(/stream not found/i);
  });
});

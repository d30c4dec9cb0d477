import { jetstream } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { callControl, ensureSpace, JS_OPTIONS, jetStreamConnection, StorageLimitError, storageRefusalError, type Endpoint } from "../../broker/index.js";
import { BUCKET_VALUE_BYTES, names, OPERATOR_PRINCIPAL, ROSTER_PAGE_BYTES, type Presence } from "../../schemas/index.js";
import { TEST_STORAGE, TestMesh } from "../harness/mesh.js";
import { until } from "../../testbed/until.js";

/**
 * The hole this closes: two agents each wrote a 600 KB presence record, and `roster` failed for
 * everyone, and stayed failed after they left (the mesh service keeps the last record of those
 * who left, and its answer passed the server's max payload). Every peer-written record is now
 * bounded by the broker (the bucket's largest value) and by the schema, and a record a reader
 * cannot take is skipped with a log line, never fatal.
 */
const SPACE = "bnd";
let mesh: TestMesh;
let alice: Endpoint;

beforeAll(async () => {
  mesh = await TestMesh.startStatic(SPACE);
  alice = await mesh.joined("alice");
});

afterAll(async () => {
  await mesh?.close();
});

function record(name: string, extra: Partial<Presence> & Record<string, unknown> = {}): Presence {
  return {
    card: { id: `local.${name}`, name, kind: "agent", owner: "local", actor: name, tags: [], meta: {} },
    status: "idle",
    ts: Date.now(),
    attention: "open",
    channelModes: {},
    channels: [],
    ...extra,
  } as Presence;
}

/** A minted agent's own connection, as an attacker holds it (raw NATS, its inbox prefix). */
async function agent(name: string): Promise<NatsConnection> {
  const creds = await mesh.mint({ name, profile: "agent", allowSubscribe: ["general"], allowPublish: ["general"] });
  return jetStreamConnection(await mesh.connection(creds, `_INBOX.local.${name}`), creds);
}

/** Write `value` under `key` of the presence bucket as `nc` (its own key), by JetStream publish. */
async function putPresence(nc: NatsConnection, key: string, value: unknown): Promise<unknown> {
  return jetstream(nc, JS_OPTIONS)
    .publish(`$KV.${names.presenceBucket(SPACE)}.${key}`, JSON.stringify(value))
    .then(
      () => undefined,
      (e: unknown) => e,
    );
}

/** Every id the mesh service's roster holds, page by page (each answer within the page size). */
async function rosterIds(): Promise<string[]> {
  const cli = await mesh.connection(mesh.cliCreds);
  const ids: string[] = [];
  for (let after: string | undefined; ;) {
    const rows = await callControl(cli, SPACE, "roster", OPERATOR_PRINCIPAL, after ? { after } : {});
    expect(JSON.stringify(rows).length).toBeLessThanOrEqual(ROSTER_PAGE_BYTES);
    if (rows.length === 0) return ids;
    ids.push(...rows.map((r) => r.id));
    after = rows.at(-1)!.id;
  }
}

describe("one presence record cannot break the roster", () => {
  test("a 400 KB presence record is refused by the broker, naming the bucket and its limit; the roster still answers", async () => {
    const stored: string[] = [];
    for (const name of ["big1", "big2"]) {
      const nc = await agent(name);
      // 400 KB: past the bucket's bound, within an agent's payload (512 KiB; a 600 KB write is refused before it reaches the bucket).
      const err = await putPresence(nc, `local.${name}`, record(name, { environment: { blob: "x".repeat(400 * 1024) } }));
      if (err === undefined) stored.push(name);
      else {
        // What a Cotal writer shows for it: the bucket, the limit and its size.
        const shown = storageRefusalError(`$KV.${names.presenceBucket(SPACE)}.local.${name}`, err);
        expect(shown).toBeInstanceOf(StorageLimitError);
        expect((shown as Error).message).toContain(names.presenceBucket(SPACE));
        expect((shown as Error).message).toContain(`${BUCKET_VALUE_BYTES.presence} bytes`);
      }
    }
    expect(stored, "the broker stored a 400 KB presence record").toEqual([]);
    // Still answers, and keeps answering after the writers are gone (their keys age out).
    expect(await rosterIds()).toContain("local.alice");
  });

  test("a record within the broker's bound but with an oversize field is skipped; everyone else still shows", async () => {
    const nc = await agent("wide");
    const err = await putPresence(nc, "local.wide", record("wide", { environment: { blob: "y".repeat(8 * 1024) } }));
    expect(err).toBeUndefined();
    // A good record written after it: once the roster shows it, the bad one has been read (and skipped), not merely not yet seen.
    const marker = await agent("marker");
    expect(await putPresence(marker, "local.marker", record("marker", {}))).toBeUndefined();
    let ids: string[] = [];
    await until(async () => (ids = await rosterIds()).includes("local.marker"), 15_000, "the record written after the oversize one on the roster");
    expect(ids).toContain("local.alice");
    expect(ids).not.toContain("local.wide");
  });

  test("a roster larger than one reply is served in pages: many large records, every row arrives", async () => {
    // The operator's tool may write any presence key: 120 records near the bound are ≈ 1.5 MB,
    // more than the server's max payload (1 MB) carries in one answer.
    const cli = jetStreamConnection(await mesh.connection(mesh.cliCreds), mesh.cliCreds);
    const many = Array.from({ length: 120 }, (_, i) => `crowd${i}`);
    const pad = "z".repeat(900);
    for (const name of many) {
      const meta = Object.fromEntries(Array.from({ length: 12 }, (_, k) => [`k${k}`, pad]));
      const r = record(name, { card: { ...record(name).card, meta } });
      expect(await putPresence(cli, `local.${name}`, r)).toBeUndefined();
    }
    await until(async () => (await rosterIds()).filter((id) => id.startsWith("local.crowd")).length === many.length, 20_000, "every crowd row in the roster");
    // An endpoint loading the roster (what `cotal roster` and every seat do) sees them all.
    const view = await alice.roster();
    await until(() => many.every((n) => view.get(`local.${n}`)), 10_000, "alice's roster to hold every crowd row");
  });

  test("cotal up bounds the buckets of a mesh provisioned before the bounds, in place", async () => {
    const jsm = await mesh.dataJsm();
    for (const bucket of [names.presenceBucket(SPACE), names.managersBucket(SPACE)]) {
      const config = (await jsm.streams.info(`KV_${bucket}`)).config;
      await jsm.streams.update(`KV_${bucket}`, { ...config, max_msg_size: -1 });
    }
    const report = await ensureSpace(mesh.serviceConnection, SPACE, { limits: TEST_STORAGE });
    expect(report.updated).toEqual(expect.arrayContaining([names.presenceBucket(SPACE), names.managersBucket(SPACE)]));
    expect((await jsm.streams.info(`KV_${names.presenceBucket(SPACE)}`)).config.max_msg_size).toBe(BUCKET_VALUE_BYTES.presence);
    expect((await jsm.streams.info(`KV_${names.managersBucket(SPACE)}`)).config.max_msg_size).toBe(BUCKET_VALUE_BYTES.managers);
    // And a second run changes nothing.
    const again = await ensureSpace(mesh.serviceConnection, SPACE, { limits: TEST_STORAGE });
    expect(again.updated).toEqual([]);
  });
});

import { jetstream, JetStreamApiError } from "@nats-io/jetstream";
import { headers, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { callControl, isPermissionDenied, type Endpoint } from "../../broker/index.js";
import { dmSubject, encodeMessage, localPrincipal, names, type CotalMessage } from "../../schemas/index.js";
import { TestMesh } from "../harness/mesh.js";
import { expectUnchanged, revokeStillCuts, snapshot } from "./state.js";

/**
 * Attacks that need no reply subject: reading records clients must not see, filling storage,
 * taking a role the credential does not hold, and wiping presence with a rollup. Each is refused
 * with a typed error (never a timeout) and leaves the mesh as it was.
 */
const SPACE = "lim";
const BACKLOG = 5;
let mesh: TestMesh;
let alice: Endpoint;

beforeAll(async () => {
  mesh = await TestMesh.startStatic(SPACE, { limits: { backlogPerSender: BACKLOG, dmBytes: 512 * 1024 } });
  alice = await mesh.joined("alice");
});

afterAll(async () => {
  await mesh?.close();
});

let n = 0;
async function mallory(profile: "agent" | "observer" = "agent"): Promise<{ nc: NatsConnection; name: string }> {
  const name = `mallory${n++}`;
  const creds = await mesh.mint(
    profile === "agent" ? { name, profile, allowSubscribe: ["general"], allowPublish: ["general"], provision: true } : { name, profile },
  );
  return { name, nc: await mesh.connection(creds, `_INBOX.local.${name}`) };
}

function dm(from: string, to: string, text: string): CotalMessage {
  return {
    id: `m-${n++}-${Math.random().toString(36).slice(2)}`,
    ts: Date.now(),
    space: SPACE,
    from: { id: `local.${from}`, name: from },
    to: `local.${to}`,
    parts: [{ kind: "text", text }],
  } as CotalMessage;
}

/** The broker refused it (permission) or nothing in the clients account serves it: never a timeout. */
async function refusedOutright(op: Promise<unknown>): Promise<void> {
  const err = await op.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err, "the operation was refused").toBeDefined();
  const noResponders = err instanceof Error && /no responders/i.test(`${err.message} ${String(err.cause ?? "")}`);
  expect(isPermissionDenied(err) || noResponders, `refused, not timed out: ${String(err)}`).toBe(true);
}

describe("records only the mesh service may read", () => {
  test.each(["agent", "observer"] as const)("%s: the members bucket (identities, scopes, user keys) cannot be read by any route", async (profile) => {
    const { nc } = await mallory(profile);
    const bucket = `KV_${names.membersBucket(SPACE)}`;
    await refusedOutright(
      nc.request(`$JS.API.STREAM.MSG.GET.${bucket}`, JSON.stringify({ last_by_subj: `$KV.${names.membersBucket(SPACE)}.id.local.alice` }), { timeout: 3_000 }),
    );
    await refusedOutright(nc.request(`$JS.API.DIRECT.GET.${bucket}`, JSON.stringify({ seq: 1 }), { timeout: 3_000 }));
    await refusedOutright(nc.request(`$JS.API.CONSUMER.CREATE.${bucket}`, JSON.stringify({ stream_name: bucket, config: {} }), { timeout: 3_000 }));
  });
});

describe("storage limits: the sender is refused with the limit named, nothing stored is lost", () => {
  test("a DM larger than the envelope limit is refused by the broker", async () => {
    const { nc, name } = await mallory();
    const before = await snapshot(mesh);
    const big = encodeMessage(dm(name, "alice", "x".repeat(200 * 1024)));
    // Past the stream's largest message (264 KiB), within an agent's payload (512 KiB: a larger
    // one is refused at the connection, test/attacks/credential-bounds.test.ts).
    const huge = new Uint8Array(400 * 1024);
    huge.set(big);
    const err = await jetstream(nc)
      .publish(dmSubject(SPACE, localPrincipal("alice"), localPrincipal(name)), huge)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(JetStreamApiError);
    expect(String(err)).toMatch(/message size exceeds maximum allowed/);
    await expectUnchanged(mesh, before);
  });

  test("one sender's backlog to one recipient (even a name that does not exist) is capped", async () => {
    const { nc, name } = await mallory();
    const js = jetstream(nc);
    const ghost = dmSubject(SPACE, localPrincipal("ghost"), localPrincipal(name));
    for (let i = 0; i < BACKLOG; i++) await js.publish(ghost, encodeMessage({ ...dm(name, "ghost", `flood ${i}`) }));
    const before = await snapshot(mesh);
    const err = await js.publish(ghost, encodeMessage(dm(name, "ghost", "one too many"))).catch((e: unknown) => e);
    expect(String(err)).toMatch(/maximum messages per subject exceeded/);
    await expectUnchanged(mesh, before);
    // The cap is per (recipient, sender): the same sender still reaches someone else.
    const ok = await js.publish(dmSubject(SPACE, localPrincipal("alice"), localPrincipal(name)), encodeMessage(dm(name, "alice", "still works")));
    expect(ok.seq).toBeGreaterThan(0);
  });

  test("when the DM stream is full, new DMs are refused and every stored one is kept", async () => {
    const senders = await Promise.all([mallory(), mallory(), mallory(), mallory()]);
    const body = (from: string, i: number) => encodeMessage(dm(from, "alice", `${i} ${"y".repeat(60 * 1024)}`));
    let refusedWith: unknown;
    let stored = 0;
    outer: for (let i = 0; i < BACKLOG; i++) {
      for (const s of senders) {
        const r = await jetstream(s.nc)
          .publish(dmSubject(SPACE, localPrincipal("alice"), localPrincipal(s.name)), body(s.name, i))
          .catch((e: unknown) => e);
        if (r instanceof Error) {
          refusedWith = r;
          break outer;
        }
        stored++;
      }
    }
    expect(String(refusedWith)).toMatch(/maximum bytes exceeded|insufficient resources|resource limits exceeded/i);
    const jsm = await mesh.dataJsm();
    const info = await jsm.streams.info(names.dmStream(SPACE));
    expect(info.state.messages).toBeGreaterThanOrEqual(stored);
  });
});

describe("roles and presence come from the credential", () => {
  test("an agent cannot register a role its credential does not hold, and no role queue is created", async () => {
    const { nc, name } = await mallory();
    const before = await snapshot(mesh);
    await expect(callControl(nc, SPACE, "register", localPrincipal(name), { role: "mesh_admin" })).rejects.toThrow(/does not hold the role mesh_admin/);
    await expectUnchanged(mesh, before);
  });

  test("a rollup on one's own presence key does not wipe anyone else's", async () => {
    const { nc, name } = await mallory();
    const presence = names.presenceBucket(SPACE);
    // Records are written on change only (protocol 0.3) and age out of the bucket: alice's is fresh now.
    await alice.setPresence({ active: true });
    const h = headers();
    h.set("Nats-Rollup", "all");
    const err = await jetstream(nc)
      .publish(`$KV.${presence}.local.${name}`, "{}", { headers: h })
      .catch((e: unknown) => e);
    expect(String(err)).toMatch(/rollup not permitted/i);
    const jsm = await mesh.dataJsm();
    const keys = (await jsm.streams.info(`KV_${presence}`, { subjects_filter: ">" })).state.subjects ?? {};
    expect(Object.keys(keys)).toContain(`$KV.${presence}.local.alice`);
    await revokeStillCuts(mesh, localPrincipal(name), nc);
    expect(alice).toBeDefined();
  });
});

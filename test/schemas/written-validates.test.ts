// What our endpoint and connector put on the wire, read back from a real mesh (the stored message
// bytes, the presence KV entry), validates against the exported JSON Schemas in docs/schema/ with
// ajv: a conforming reader written against those documents reads everything we write.
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { afterEach, describe } from "vitest";
import type { Endpoint } from "../../broker/index.js";
import { beatSubject, COTAL_PROTOCOL_VERSION, names, parsePrincipal, type Part } from "../../schemas/index.js";
import { hook, startConnector } from "../connector/helpers.js";
import { expect, test, until } from "../harness/fixtures.js";
import { TestMesh } from "../harness/mesh.js";
import { wireFixture, wireValidators } from "../harness/wire-schemas.js";

const validate = wireValidators();
let mesh: TestMesh | undefined;
afterEach(async () => {
  await mesh?.close();
  mesh = undefined;
});

/** The bytes the broker stored for a receipt, parsed. */
async function stored(m: TestMesh, stream: string, seq: number): Promise<Record<string, unknown>> {
  const jsm = await jetstreamManager(m.serviceConnection);
  const msg = await jsm.streams.getMessage(stream, { seq });
  return JSON.parse(msg!.string()) as Record<string, unknown>;
}

/** The presence record stored under a principal's key, parsed. */
async function presenceOf(m: TestMesh, id: string): Promise<Record<string, unknown>> {
  const kv = await new Kvm(jetstream(m.serviceConnection)).open(names.presenceBucket(m.space), { bindOnly: true });
  const e = await kv.get(id);
  return JSON.parse(e!.string()) as Record<string, unknown>;
}

describe("what we write validates against the exported JSON Schemas (ajv)", () => {
  test("envelopes of a post, a DM and an anycast, every part kind, as stored", async ({ nats }) => {
    mesh = await TestMesh.start(nats, "written");
    const alice: Endpoint = await mesh.joined("alice", { role: "builder" });
    await mesh.joined("bob");
    const parts: Part[] = [
      { kind: "text", text: "hello" },
      { kind: "data", data: { n: 1 }, mediaType: "application/json" },
      (wireFixture("artifact.json").parts as Part[])[1]!,
      { kind: "example.note", note: "fields of its own" },
    ];
    const post = await alice.send("general", parts, { mentions: ["Bob"], replyTo: "m-0", contextId: "c-1" });
    const dm = await alice.dm("carol", "to someone who never joined (so it stays stored)");
    const any = await alice.anycast("reviewer", "no holder yet (so it stays stored)");
    for (const [r, stream] of [
      [post, names.chatStream(mesh.space)],
      [dm, names.dmStream(mesh.space)],
      [any, names.taskStream(mesh.space)],
    ] as const) {
      const m = await stored(mesh, stream, r.seq);
      expect(validate("CotalMessage", m), `${stream} seq ${r.seq}`).toEqual([]);
      expect(typeof m.ts).toBe("number");
    }
    const p = await stored(mesh, names.chatStream(mesh.space), post.seq);
    expect(p.mentions).toEqual(["bob"]); // lowercased on the wire
    expect(p.parts).toEqual(parts);
  });

  test("an endpoint's presence record and card, with a condition object and channel modes", async ({ nats }) => {
    mesh = await TestMesh.start(nats, "written");
    const ep = await mesh.joined("alice", { role: "builder", skills: [{ id: "build", name: "Build" }], meta: { host: "h1" } });
    await ep.joinChannel("general");
    await ep.setPresence({
      status: "waiting",
      condition: { code: "approval", source: "test", message: "waiting for a person" },
      activity: "Bash",
      channelModes: { general: "quiet", other: "muted" },
      active: true,
    });
    await ep.setPresence({ channelModes: { other: "normal" } }); // normal is absence on the wire
    const rec = await presenceOf(mesh, ep.id);
    expect(validate("Presence", rec)).toEqual([]);
    expect(validate("AgentCard", rec.card)).toEqual([]);
    expect(rec.card).toMatchObject({
      kind: "endpoint",
      owner: "local",
      actor: "alice",
      protocolVersion: COTAL_PROTOCOL_VERSION,
      skills: [{ id: "build", name: "Build" }],
    });
    expect(rec).toMatchObject({
      status: "waiting",
      condition: { code: "approval", source: "test", message: "waiting for a person" },
      channelModes: { general: "quiet" },
    });
    expect(typeof (rec.condition as { since: unknown }).since).toBe("number");
    expect(rec.channelModes).not.toHaveProperty("other");
    await ep.leave();
    expect(validate("Presence", await presenceOf(mesh, ep.id))).toEqual([]);
  });

  test("a connector's presence from hooks: condition from StopFailure, the record untouched by heartbeats, activeAt moved by a tool call", async ({ nats }) => {
    mesh = await TestMesh.start(nats, "written");
    const seat = await startConnector(mesh, "bob", { heartbeatMs: 100, launch: { uid: "abcdefghijklmnopqrstuvwxyz" } });
    try {
      const id = seat.connector.id;
      await hook(seat.env, "SessionStart", { source: "startup", model: "claude-test-model" });
      await hook(seat.env, "UserPromptSubmit");
      await hook(seat.env, "PreToolUse", { tool_name: "Bash" });
      await until(async () => (await presenceOf(mesh!, id)).activity === "Bash", 5_000, "bob's presence shows the tool call");
      const working = await presenceOf(mesh, id);
      expect(validate("Presence", working)).toEqual([]);
      expect(working.card).toMatchObject({ kind: "agent", meta: { connector: "claude-code", sessionId: "s-test", model: "claude-test-model" } });
      expect(working).toMatchObject({ status: "working", lifecycleUid: "abcdefghijklmnopqrstuvwxyz" });
      expect(working.activeAt).toBe(working.activitySince);

      // Heartbeats are beats to the mesh service (protocol 0.3): three of them leave the record as written.
      let beats = 0;
      const sub = mesh.serviceConnection.subscribe(beatSubject(mesh.space, parsePrincipal(id)), { callback: () => void beats++ });
      await until(() => beats >= 3, 5_000, "three beats from bob");
      sub.unsubscribe();
      const later = await presenceOf(mesh, id);
      expect(later.ts).toBe(working.ts);
      expect(later.statusSince).toBe(working.statusSince);
      expect(later.activeAt).toBe(working.activeAt);

      await hook(seat.env, "StopFailure", { error: "rate_limit" });
      await until(async () => (await presenceOf(mesh!, id)).condition !== undefined, 5_000, "bob's presence shows the failure");
      const failed = await presenceOf(mesh, id);
      expect(validate("Presence", failed)).toEqual([]);
      expect(failed).toMatchObject({ status: "idle", condition: { code: "rate_limit", source: "hook:StopFailure", message: "rate_limit" } });
      expect(failed.statusSince as number).toBeGreaterThan(working.statusSince as number);
      expect(failed).not.toHaveProperty("activity");
    } finally {
      await seat.close();
    }
  });
});

// A client written against the published Cotal shapes (protocol 0.2), not ours: its messages,
// published raw with the NATS client on the subjects and headers the spec names, reach a listening
// Endpoint, channel history and a connector's inbox; its raw presence record shows in the roster;
// a non-conforming message is dropped with a log line naming the field, terminated, never redelivered.
import { jetstream } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { afterEach, describe } from "vitest";
import { inboxPrefix, JS_OPTIONS, jetStreamConnection, setLogDestination, type Endpoint } from "../../broker/internal.js";
import { anycastSubject, chatSubject, dmSubject, durables, localPrincipal, names, type Part } from "../../schemas/index.js";
import { collect } from "../harness/deliveries.js";
import { expect, test, until } from "../harness/fixtures.js";
import { STATIC_TEST_CHANNELS, TestMesh } from "../harness/mesh.js";
import { meshMode } from "../harness/mesh-mode.js";
import { wireFixture } from "../harness/wire-schemas.js";
import { startConnector } from "../connector/helpers.js";

const SPACE = "demo"; // the fixtures' space
const zed = localPrincipal("zed");
const bob = localPrincipal("bob");
const enc = (o: unknown) => new TextEncoder().encode(JSON.stringify(o));

let mesh: TestMesh | undefined;
afterEach(async () => {
  setLogDestination(undefined);
  await mesh?.close();
  mesh = undefined;
});

/** A credential for `name` in static mode (undefined on an open mesh). */
async function credsFor(m: TestMesh, name: string, role?: string): Promise<string | undefined> {
  if (meshMode() !== "static") return undefined;
  return m.mint({ name, profile: "agent", allowSubscribe: STATIC_TEST_CHANNELS, allowPublish: STATIC_TEST_CHANNELS, ...(role ? { role } : {}) });
}

/** The conforming client "zed": a bare NATS connection publishing bytes it built itself. */
async function rawClient(m: TestMesh) {
  const creds = await credsFor(m, "zed");
  const nc = await m.connection(creds, inboxPrefix(zed));
  const js = jetstream(jetStreamConnection(nc, creds), JS_OPTIONS);
  const subjectOf = (raw: Record<string, unknown>) =>
    raw.channel ? chatSubject(SPACE, zed, raw.channel as string) : raw.to ? dmSubject(SPACE, bob, zed) : anycastSubject(SPACE, raw.toService as string, zed);
  return {
    /** Publish a record as another client would: its bytes, `Nats-Msg-Id` = its id. */
    async publish(raw: Record<string, unknown>) {
      await js.publish(subjectOf(raw), enc(raw), { msgID: raw.id as string });
    },
    async putPresence(raw: Record<string, unknown>) {
      const kv = await new Kvm(js).open(names.presenceBucket(SPACE), { bindOnly: true });
      await kv.put("local.zed", JSON.stringify(raw));
    },
  };
}

/** Every fixture the published shapes allow, plus one stored before 0.2 (ISO ts). */
function publishedMessages(): Record<string, unknown>[] {
  const legacy = { ...wireFixture("channel-post.json"), id: "pub-legacy-1", ts: "2026-01-01T00:00:00.000Z", mentions: undefined };
  return [...["channel-post.json", "dm.json", "anycast.json", "artifact.json", "extension.json"].map(wireFixture), legacy];
}

async function joinedBob(m: TestMesh): Promise<Endpoint> {
  const ep = await m.joined("bob", { role: "reviewer" });
  await ep.joinChannel("general");
  return ep;
}

describe("a client speaking the published wire shapes", () => {
  test("its messages reach a listening endpoint and channel history, ts in epoch ms, every part kept", async ({ nats }) => {
    mesh = await TestMesh.start(nats, SPACE);
    const ep = await joinedBob(mesh);
    const got = collect(ep);
    const zedClient = await rawClient(mesh);
    for (const raw of publishedMessages()) await zedClient.publish(raw);

    await until(() => got.items.length >= 6, 10_000, "all six published messages reach bob");
    const byId = new Map(got.items.map((d) => [d.message.id, d]));
    expect([...byId.keys()].sort()).toEqual(["pub-any-1", "pub-art-1", "pub-dm-1", "pub-ext-1", "pub-legacy-1", "pub-post-1"]);
    expect(byId.get("pub-dm-1")).toMatchObject({ kind: "dm", message: { ts: 1767225601000 } });
    expect(byId.get("pub-any-1")).toMatchObject({ kind: "anycast", role: "reviewer" });
    expect(byId.get("pub-post-1")?.message.mentions).toEqual(["bob"]);
    expect(byId.get("pub-legacy-1")?.message.ts).toBe(Date.parse("2026-01-01T00:00:00.000Z"));
    expect(byId.get("pub-art-1")?.message.parts[1]).toEqual((wireFixture("artifact.json").parts as Part[])[1]);
    expect(byId.get("pub-ext-1")?.message.parts[1]).toEqual({ kind: "Example-Org.ui.Card", title: "Deploy", rows: [["env", "staging"]], version: 3 });

    const history = await ep.history("general");
    expect(history.map((h) => [h.message.id, h.message.ts])).toEqual([
      ["pub-post-1", 1767225600000],
      ["pub-ext-1", 1767225604000],
      ["pub-legacy-1", Date.parse("2026-01-01T00:00:00.000Z")],
    ]);
  });

  test("its messages reach a connector's inbox, framed with the artifact's name, media type, size and digest", async ({ nats }) => {
    mesh = await TestMesh.start(nats, SPACE);
    const creds = await credsFor(mesh, "bob", "reviewer");
    const seat = await startConnector(mesh, "bob", { launch: { role: "reviewer", channels: ["general"], ...(creds ? { creds } : {}) } });
    try {
      const zedClient = await rawClient(mesh);
      for (const raw of publishedMessages()) await zedClient.publish(raw);
      await until(() => seat.connector.status().inbox.total >= 6, 10_000, "all six published messages reach bob's inbox");
      const { text } = seat.connector.drainContext("UserPromptSubmit");
      expect(text).toMatch(/\[cotal #general from local\.zed [^\]]* · id pub-post-1 · mentions you\]/);
      expect(text).toContain(`│ (artifact report.pdf, application/pdf, 48213 bytes, sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08)`);
      expect(text).toContain("│ (extension Example-Org.ui.Card, 57 bytes of fields)");
      expect(text).toContain("[cotal DM from local.zed · 2026-01-01T00:00:01.000Z · id pub-dm-1]");
    } finally {
      await seat.close();
    }
  });

  test("its raw presence record shows in the roster: card kind, condition object, times", async ({ nats }) => {
    mesh = await TestMesh.start(nats, SPACE);
    const ep = await joinedBob(mesh);
    const zedClient = await rawClient(mesh);
    const record = { ...wireFixture("presence.json"), ts: Date.now() };
    await zedClient.putPresence(record);
    const roster = await ep.roster();
    await until(() => roster.get("local.zed") !== undefined, 5_000, "zed appears on bob's roster");
    const e = roster.get("local.zed")!;
    expect(e.status).toBe("waiting");
    expect(e.presence.condition).toEqual({ code: "rate_limit", message: "429 from the provider", since: 1767225590000, source: "hook:StopFailure" });
    expect(e.presence.card).toMatchObject({ kind: "agent", skills: [{ id: "build", name: "Build", description: "runs the build" }], protocolVersion: "0.2" });
    expect(e.presence).toMatchObject({ statusSince: 1767225590000, activeAt: 1767225599000, channelModes: { general: "quiet", random: "muted" } });
  });

  test("a non-conforming message is dropped with a log line naming the field, terminated and never redelivered", async ({ nats }) => {
    const logs: Array<Record<string, unknown>> = [];
    setLogDestination({ write: (line: string) => void logs.push(JSON.parse(line) as Record<string, unknown>) });
    mesh = await TestMesh.start(nats, SPACE);
    const ep = await joinedBob(mesh);
    const got = collect(ep);
    const zedClient = await rawClient(mesh);
    await zedClient.publish(wireFixture("invalid/artifact-bad-digest.json"));
    await zedClient.publish(wireFixture("dm.json"));
    await until(() => got.items.some((d) => d.message.id === "pub-dm-1"), 10_000, "the good DM after the bad one arrives");
    const dropped = logs.filter((l) => l.me === "local.bob" && l.msg === "dropped a malformed message");
    expect(dropped).toHaveLength(1);
    expect(dropped[0]!.issues).toEqual(['parts.0.digest: digest must be "sha256:" and 64 lowercase hex characters']);
    const jsm = await mesh.dataJsm();
    await until(
      async () => {
        const info = await jsm.consumers.info(names.dmStream(SPACE), durables.dm(bob));
        return info.num_ack_pending === 0 && info.num_pending === 0;
      },
      5_000,
      "bob's DM inbox holds nothing unacked",
    );
    const info = await jsm.consumers.info(names.dmStream(SPACE), durables.dm(bob));
    expect(info.num_redelivered).toBe(0);
    expect(got.items.map((d) => d.message.id)).toEqual(["pub-dm-1"]);
  });
});

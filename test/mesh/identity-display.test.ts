// The name shown for a sender or a roster row is the verified principal's actor: a payload's
// `from.name` or a card's `name` is only a claim. Presence off the wire is validated.
import { jetstream } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { afterEach, describe } from "vitest";
import { setLogDestination } from "../../broker/index.js";
import { chatSubject, dmSubject, encodeMessage, localPrincipal, names, type CotalMessage } from "../../schemas/index.js";
import { collect } from "../harness/deliveries.js";
import { expect, test, until } from "../harness/fixtures.js";
import { TestMesh } from "../harness/mesh.js";
import { meshMode } from "../harness/mesh-mode.js";

let mesh: TestMesh | undefined;
afterEach(async () => {
  setLogDestination(undefined);
  await mesh?.close();
  mesh = undefined;
});

describe("the verified identity is what is shown", () => {
  test("a DM and a post from alice claiming to be carol are shown as from alice, live and in history", async ({ nats }) => {
    mesh = await TestMesh.start(nats, "ident");
    const alice = await mesh.joined("alice");
    const bob = await mesh.joined("bob");
    await mesh.joined("carol");
    const got = collect(bob);
    await bob.joinChannel("general");

    // alice publishes with her own credential, but names herself carol in the payload.
    const js = jetstream(alice.nc);
    const forged = (address: Pick<CotalMessage, "channel" | "to">, id: string): CotalMessage => ({
      id,
      ts: Date.now(),
      space: mesh!.space,
      from: { id: "local.alice", name: "carol", role: "mesh_admin" },
      ...address,
      parts: [{ kind: "text", text: `i am carol (${id})` }],
    });
    await js.publish(dmSubject(mesh.space, localPrincipal("bob"), localPrincipal("alice")), encodeMessage(forged({ to: "local.bob" }, "claim-dm")), {
      msgID: "claim-dm",
    });
    await js.publish(chatSubject(mesh.space, localPrincipal("alice"), "general"), encodeMessage(forged({ channel: "general" }, "claim-post")), {
      msgID: "claim-post",
    });

    await until(() => got.items.length === 2, 5_000, "bob gets the DM and the post");
    for (const d of got.items) {
      expect(d.from).toEqual({ owner: "local", actor: "alice" });
      expect(d.message.from).toMatchObject({ id: "local.alice", name: "alice" });
      expect(d.message.from.role, "a role claimed in the payload is not shown").toBeUndefined();
    }
    const [item] = await bob.history("general");
    expect(item!.message.from.name).toBe("alice");
    expect(item!.message.from.role).toBeUndefined();

    // A late joiner's backfill shows the same.
    const dave = await mesh.joined("dave");
    const gotDave = collect(dave);
    await dave.joinChannel("general");
    await until(() => gotDave.items.length === 1, 5_000, "dave's backfill");
    expect(gotDave.items[0]!.message.from.name).toBe("alice");
  });

  test("the roster names each row by its key: a card claiming another name does not make a second carol", async ({ nats }) => {
    const logs: Array<Record<string, unknown>> = [];
    setLogDestination({ write: (line: string) => void logs.push(JSON.parse(line) as Record<string, unknown>) });
    mesh = await TestMesh.start(nats, "roster");
    const alice = await mesh.joined("alice", { heartbeatMs: 600_000 }); // her own beats must not overwrite the test's records
    await mesh.joined("carol");
    const bob = await mesh.joined("bob");
    const roster = await bob.roster();
    await until(() => roster.entries().length === 3, 5_000, "bob sees three peers");

    // alice rewrites her own presence key with a card named carol (all she may write).
    const kv = await new Kvm(alice.nc).open(names.presenceBucket(mesh.space), { bindOnly: true });
    const card = { id: "local.alice", name: "carol", kind: "agent", tags: [], meta: {} };
    await kv.put("local.alice", JSON.stringify({ card, status: "working", attention: "open", channels: [], channelModes: {}, ts: Date.now() }));
    await until(() => roster.get("local.alice")?.status === "working", 5_000, "bob sees alice's new record");
    expect(roster.entries().map((e) => e.name)).toEqual(["alice", "bob", "carol"]);
    expect(roster.known("carol")).toBe(true);

    // A record whose card names someone else is dropped, as is a publish ack landing on her key.
    await kv.put(
      "local.alice",
      JSON.stringify({ card: { ...card, id: "local.carol" }, status: "idle", attention: "open", channels: [], channelModes: {}, ts: Date.now() }),
    );
    alice.nc.publish(`$KV.${names.presenceBucket(mesh.space)}.local.alice`, JSON.stringify({ stream: names.chatStream(mesh.space), seq: 7 }));
    await until(
      () =>
        logs.some((l) => l.msg === "dropped a presence record whose card id disagrees with its key" && l.key === "local.alice") &&
        logs.some((l) => l.msg === "dropped a malformed presence record" && l.key === "local.alice"),
      5_000,
      "bob logs both dropped records",
    );
    expect(roster.get("local.alice")?.status).toBe("working");
    expect(roster.get("local.carol")?.presence.card.id).toBe("local.carol");
    expect(roster.entries().filter((e) => e.name === "carol")).toHaveLength(1);

    // The mesh service's view (a KV watch: the ack was stored as a value) drops them too, and still serves its snapshot.
    await until(
      () => logs.some((l) => l.component === "mesh-service" && l.msg === "dropped a malformed presence record" && l.key === "local.alice"),
      5_000,
      "the mesh service logs the dropped ack",
    );
    const erin = await mesh.joined("erin");
    const erinView = await erin.roster();
    expect(erinView.entries().map((e) => e.name)).toEqual(["alice", "bob", "carol", "erin"]);
    expect(erinView.get("local.alice")?.status).toBe("working");
  });

  test("a role shown on the roster is the one the credential holds, never one a card claims", async ({ nats }) => {
    mesh = await TestMesh.start(nats, "roles");
    const mallory = await mesh.joined("mallory", { heartbeatMs: 600_000 });
    await mesh.joined("rita", { role: "reviewer" });
    const bob = await mesh.joined("bob");
    const roster = await bob.roster();
    await until(() => roster.entries().length === 3, 5_000, "bob sees three peers");
    expect(roster.get("local.rita")?.role).toBe("reviewer");
    // mallory holds no role but writes one into her own card (all she may write).
    const kv = await new Kvm(mallory.nc).open(names.presenceBucket(mesh.space), { bindOnly: true });
    const card = { id: "local.mallory", name: "mallory", kind: "agent", role: "mesh_admin", tags: [], meta: {} };
    await kv.put("local.mallory", JSON.stringify({ card, status: "working", attention: "open", channels: [], channelModes: {}, ts: Date.now() }));
    await until(() => roster.get("local.mallory")?.status === "working", 5_000, "bob sees mallory's claim");
    // A late joiner's view (fed by the mesh service's snapshot) says the same.
    const late = await (await mesh.joined("late")).roster();
    await until(() => late.get("local.mallory")?.status === "working", 5_000, "the late joiner sees mallory");
    if (meshMode() === "static") {
      expect(roster.get("local.mallory")?.role, "a claimed role is not shown").toBeUndefined();
      expect(late.get("local.mallory")?.role).toBeUndefined();
      expect(late.get("local.rita")?.role).toBe("reviewer");
    } else {
      // An open mesh verifies nothing: the card's role is all there is.
      expect(roster.get("local.mallory")?.role).toBe("mesh_admin");
    }
  });
});

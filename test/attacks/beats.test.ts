// Beats are the mesh service's alone (presence in O(n), protocol 0.3): an agent's credential may
// publish only its own beat, and may not read anyone's. In static mode the broker enforces both.
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { permissionViolation, type Endpoint } from "../../broker/index.js";
import { beatFilter, beatSubject, localPrincipal, type PresenceBeat } from "../../schemas/index.js";
import { TestMesh } from "../harness/mesh.js";
import { until } from "../../testbed/until.js";

const SPACE = "beats";
let mesh: TestMesh;
let alice: Endpoint;
let bob: Endpoint;
let mallory: NatsConnection;
const refusals: string[] = [];

beforeAll(async () => {
  mesh = await TestMesh.startStatic(SPACE, { livenessMs: 1_500 });
  alice = await mesh.joined("alice", { heartbeatMs: 200 });
  bob = await mesh.joined("bob", { heartbeatMs: 200 });
  mallory = await mesh.connection(
    await mesh.mint({ name: "mallory", profile: "agent", allowSubscribe: ["general"], allowPublish: ["general"] }),
    "_INBOX.local.mallory",
  );
  void (async () => {
    for await (const s of mallory.status()) {
      const pv = s.type === "error" ? permissionViolation(s.error) : undefined;
      if (pv) refusals.push(`${pv.operation} ${pv.subject}`);
    }
  })();
});

afterAll(async () => {
  await mesh?.close();
});

describe("liveness beats", () => {
  test("an agent credential cannot subscribe to beats, its own or anyone's", async () => {
    for (const subject of [beatFilter(SPACE), beatSubject(SPACE, localPrincipal("alice")), `cotal.${SPACE}.>`]) {
      let got = 0;
      const sub = mallory.subscribe(subject, { callback: (err) => void (!err && got++) });
      await mallory.flush();
      const closed = await Promise.race([sub.closed, new Promise((r) => setTimeout(() => r("open"), 2_000))]);
      expect(permissionViolation(closed), `subscribe ${subject} refused`).toBeDefined();
      expect(got).toBe(0);
    }
  });

  test("a leaf host's credential cannot read beats either (they cross to the hub, never back)", async () => {
    const leaf = await mesh.connection(await mesh.mint({ name: "hostb_leaf", profile: "leaf" }), "_INBOX.local.hostb_leaf");
    try {
      const sub = leaf.subscribe(beatFilter(SPACE));
      await leaf.flush();
      const closed = await Promise.race([sub.closed, new Promise((r) => setTimeout(() => r("open"), 2_000))]);
      expect(permissionViolation(closed), "subscribe to beats refused").toBeDefined();
    } finally {
      await leaf.close();
    }
  });

  test("an agent credential cannot publish another's beat (the broker refuses it)", async () => {
    const beat: PresenceBeat = {
      ts: Date.now(),
      presence: {
        card: { id: "local.alice", name: "alice", kind: "agent", tags: [], meta: {} },
        status: "idle",
        ts: Date.now(),
        attention: "open",
        channelModes: {},
        channels: [],
      },
    };
    mallory.publish(beatSubject(SPACE, localPrincipal("alice")), JSON.stringify(beat));
    await mallory.flush();
    await until(
      () => refusals.some((r) => r === `publish ${beatSubject(SPACE, localPrincipal("alice"))}`),
      5_000,
      "the broker's refusal of mallory's forged beat",
    );
  });

  test("an agent's own beats reach the mesh service through the clients account: it stays online while a dead peer goes offline", async () => {
    const view = await alice.roster();
    await until(() => view.get("local.bob")?.status === "idle", 5_000, "alice sees bob");
    let aliceOffline = false;
    view.onChange(() => void (view.get("local.alice")?.status === "offline" && (aliceOffline = true)));
    await bob.nc.close(); // killed: no goodbye
    await until(() => view.get("local.bob")?.status === "offline", 15_000, "bob taken offline by the mesh service");
    // alice joined before bob; had her beats not reached the mesh service she would have gone first.
    expect(aliceOffline).toBe(false);
    expect(view.get("local.alice")?.status).toBe("idle");
  });
});

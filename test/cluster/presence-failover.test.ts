// Killing and restarting any single node of a 3-node cluster never shows a live seat offline for
// longer than the liveness window. An observer endpoint's roster records every transition with
// the time it heard it; each node in turn is SIGKILLed, watched for a full liveness window (and a
// beat) past the kill, and restarted. Live endpoints may never be offline longer than the window.
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Endpoint, MeshService } from "../../broker/index.js";
import { PRESENCE } from "../../schemas/index.js";
import { cluster, type NatsCluster } from "../harness/cluster.js";
import { collect } from "../harness/deliveries.js";
import { TEST_STORAGE } from "../harness/mesh.js";
import { until } from "../../testbed/until.js";

const SPACE = "pfail";
const LIVE = ["alice", "bob", "carol"];

let c: NatsCluster;
let serviceNc: NatsConnection;
let service: MeshService;
const endpoints: Endpoint[] = [];

beforeAll(async () => {
  c = await cluster(3);
  serviceNc = await connect({ servers: [...c.urls], maxReconnectAttempts: -1, reconnectTimeWait: 250 });
  service = await MeshService.start(serviceNc, SPACE, { limits: TEST_STORAGE });
}, 60_000);

afterAll(async () => {
  for (const ep of endpoints) await ep.close().catch(() => undefined);
  await service?.stop().catch(() => undefined);
  await serviceNc?.close().catch(() => undefined);
  await c?.cleanup();
});

/** One offline spell of a live endpoint as the observer heard it: from its offline transition to its return. */
interface Spell {
  id: string;
  from: number;
  to?: number;
}

// Presence holds across each node's loss (the beat-based liveness judge never shows a live seat
// offline as long as the window), and so does delivery: a DM consumer whose leader was on the
// killed node is pulled again within two idle heartbeats of DELIVERY.pullExpiresMs (at nats.js's
// default 30 s expiry a seat got nothing for ≈ 30 s). The DM wait below is a limit on a hang,
// generous for a loaded machine, not a measurement.
describe("presence across the loss of one node", () => {
  it("never shows a live seat offline longer than the liveness window while each node in turn is killed and restarted", async () => {
    const server = c.urls.join(",");
    const connectJoined = async (name: string) => {
      const ep = await Endpoint.connect({ server, space: SPACE, name });
      endpoints.push(ep);
      await ep.join();
      return ep;
    };
    const live = await Promise.all(LIVE.map(connectJoined));
    const observer = await connectJoined("observer");
    const view = await observer.roster();
    await until(
      () => LIVE.every((n) => view.entries().some((e) => e.name === n && e.status !== "offline")),
      10_000,
      "the observer to see every live endpoint online",
    );

    // Every transition the observer's roster makes, stamped when it was heard.
    const spells: Spell[] = [];
    const offline = new Map<string, Spell>();
    view.onChange((entries) => {
      const at = Date.now();
      for (const e of entries.filter((x) => LIVE.includes(x.name))) {
        const open = offline.get(e.id);
        if (e.status === "offline" && !open) {
          const s = { id: e.id, from: at };
          offline.set(e.id, s);
          spells.push(s);
        } else if (e.status !== "offline" && open) {
          open.to = at;
          offline.delete(e.id);
        }
      }
    });
    const inboxes = live.map((ep) => collect(ep));

    for (const [i, node] of c.servers.entries()) {
      const killedAt = Date.now();
      await node.kill();
      // Watch a whole liveness window past the kill, plus one beat: a seat whose liveness lapsed
      // because of the loss would have been judged offline within it.
      await until(() => Date.now() >= killedAt + PRESENCE.livenessMs + PRESENCE.heartbeatMs, PRESENCE.livenessMs * 3, "a liveness window to pass");
      // The live seats are reachable through what is left of the cluster: each gets a DM.
      for (const [k, ep] of live.entries()) {
        const text = `still here after node ${i + 1} died`;
        await until(
          () =>
            observer.dm(ep.id.split(".")[1]!, text).then(
              () => true,
              () => false,
            ),
          20_000,
          `a DM to ${ep.id} to be stored with node ${i + 1} down`,
        );
        await until(() => inboxes[k]!.texts().includes(text), 45_000, `${ep.id} to get a DM with node ${i + 1} down`);
      }
      await node.restart();
      // A restarted node catches up on the meta log before it counts as current: minutes, not seconds, on a loaded host
      // (and when its catch-up stalls, the harness restarts it, then the meta leader: 45 s each).
      await c.waitForMetaLeader(180_000);
    }
    await until(() => LIVE.every((n) => view.entries().some((e) => e.name === n && e.status !== "offline")), 15_000, "every live endpoint online at the end");

    const end = Date.now();
    const longest = Math.max(0, ...spells.map((s) => (s.to ?? end) - s.from));
    expect(
      spells.filter((s) => (s.to ?? end) - s.from >= PRESENCE.livenessMs),
      `offline spells of live endpoints: ${JSON.stringify(spells)}; longest ${longest} ms`,
    ).toEqual([]);
  }, 600_000);
});

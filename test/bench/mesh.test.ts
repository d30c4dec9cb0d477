// The mesh bench (dist/bench.mjs) in its smoke plan: every part runs against its own private
// nats-server and its counts add up. A bench that rots (an API it drives changed, a side that
// stopped receiving or acking) fails here, not at the next `npm run bench`.
import { describe, expect, it } from "vitest";
import { MESH_PLANS, meshBench } from "../../bench/mesh.js";
import { smoke } from "./smoke.js";

const sides = (part: string, names: string[]) => names.map((n) => `${part} ${n}`);

describe("bench: mesh (dist/bench.mjs)", () => {
  it("runs latency, throughput, fan-out, event plane, presence and sync: each message received once, nothing pending", async () => {
    const plan = MESH_PLANS.smoke;
    const r = await smoke(meshBench, plan, [
      ...sides("latency", ["cotal", "raw"]),
      ...sides("throughput", ["cotal", "raw", "rawAckAck"]),
      ...sides("fanout", ["cotal", "raw", "rawAckAck"]),
      ...sides("events", ["published", "raw", "raw same work", "rendered", "hooks on", "hooks off"]),
      `presence ${plan.presence.sizes[0]} joined`,
      ...sides(`presence ${plan.presence.sizes[0]} latency`, ["cotal", "raw"]),
      `presence ${plan.presence.simulated[0]} simulated`,
      ...sides("sync always throughput", ["cotal", "raw", "rawAckAck"]),
      ...sides("sync always fanout", ["cotal", "raw", "rawAckAck"]),
      ...sides("sync 2m throughput", ["cotal", "raw", "rawAckAck"]),
      ...sides("sync 2m fanout", ["cotal", "raw", "rawAckAck"]),
    ]);
    // Fan-out counts a delivery per member and post, warm-up included.
    expect(r.tallies["fanout cotal"]!.sent).toBe(plan.fanout.members * (plan.fanout.posts + plan.fanout.warmup));
    expect(r.rows.map((row) => row.name)).toContain(`inbound to ${plan.fanout.members} idle members`);
  }, 180_000);
});

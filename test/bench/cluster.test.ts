// The cluster bench (dist/bench-cluster.mjs) in its smoke plan: DMs on one node and on a 3-node
// R3 cluster are each received once with nothing pending, raw and Cotal alike.
import { describe, expect, it } from "vitest";
import { CLUSTER_PLANS, clusterBench } from "../../bench/cluster.js";
import { smoke } from "./smoke.js";

const parts = (topology: string) =>
  ["latency cotal", "latency raw", "throughput cotal", "throughput raw", "throughput rawAckAck"].map((p) => `${topology} 1 ${p}`);

describe("bench: cluster (dist/bench-cluster.mjs)", () => {
  it("measures DMs on one node and on a 3-node R3 cluster, every DM received once", async () => {
    const r = await smoke(clusterBench, CLUSTER_PLANS.smoke, [...parts("one node"), ...parts("3-node cluster")]);
    expect(r.lines).toContain("| stream replicas seen | 1 | 3 | |");
  }, 120_000);
});

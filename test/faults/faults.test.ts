// The fault suite inside `npm test`: two short schedules on real hosts (network namespaces: three
// cluster nodes, a leaf host with a manager and echo seats) keep every promise; and with a fix
// switched off, the fault it guards against breaks one and the checker names it: the durability fix
// (`sync_interval` back to the server's default) under a power loss, a server before 2.14 under a
// full disk, a restarted manager's adoption of its seats under a killed manager, a seat's restart
// under a killed seat. A frozen node and a full disk on a newer server keep every promise. `npm run faults` runs
// the full budget (docs/reliability.md).
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { labUnavailable } from "../../testbed/faults/hosts.js";
import { runFaults } from "../../testbed/faults/run.js";
import { lazyFsMissing } from "../../testbed/lazyfs.js";
import { newestNatsServer, testNatsServer } from "../../testbed/nats-server.js";
import { projectRoot } from "../harness/build.js";
import { buildCli } from "../harness/cli.js";

const skip = labUnavailable() ?? lazyFsMissing();
if (skip) console.warn(`*** FAULT SUITE SKIPPED (test/faults/faults.test.ts): ${skip}`);

const cotal = join(projectRoot, "dist/cotal.mjs");

describe.skipIf(skip !== undefined)("the mesh under faults (network namespaces)", () => {
  beforeAll(async () => {
    await buildCli();
  }, 120_000);

  it("keeps every promise through two random fault schedules", { timeout: 240_000 }, async () => {
    const r = await runFaults({ seed: 20261207, schedules: 2, natsServer: testNatsServer(), cotal });
    expect(
      r.rounds.map((x) => x.schedule.faults.length).reduce((a, b) => a + b, 0),
      r.report,
    ).toBeGreaterThan(0);
    expect(r.summary.checked, r.report).toBeGreaterThan(50);
    expect(r.summary.violations, r.report).toBe(0);
    expect(r.report.split("\n").at(-1)).toBe(JSON.stringify(r.summary));
  });

  it("reports a broken promise when a power loss meets stores that do not sync before acknowledging", { timeout: 240_000 }, async () => {
    const r = await runFaults({ seed: 7, schedules: 1, fixOff: "sync", natsServer: testNatsServer(), cotal });
    expect(r.rounds[0]!.schedule.faults.map((f) => f.kind)).toContain("power-loss");
    const broken = r.rounds.flatMap((x) => x.violations.map((v) => v.invariant));
    expect(broken, r.report).not.toEqual([]);
    // The loss itself: acknowledged messages gone, or a stream that started again at sequence 1.
    expect(
      broken.some((v) => v === "acknowledged-is-handed" || v === "sender-order"),
      r.report,
    ).toBe(true);
  });

  it(
    "keeps every promise while a node is frozen and while the disk of the node leading the sender's inbox fills (nats-server 2.14 and newer)",
    { timeout: 240_000 },
    async () => {
      const r = await runFaults({ seed: 4, schedules: 2, only: ["pause-node", "disk-full"], natsServer: newestNatsServer(), cotal });
      expect(r.rounds.flatMap((x) => x.records.faults.map((f) => f.kind)).sort()).toEqual(["disk-full", "pause-node"]);
      expect(r.summary.violations, r.report).toBe(0);
    },
  );

  // The fixes, each switched off under the one fault kind it guards (the product's by COTAL_FIX_OFF,
  // the server's by running the nodes on 2.10): a short wait to heal and deliver, since what the
  // switch breaks does not heal.
  const switchedOff = [
    {
      fix: "adoption",
      kind: "kill-manager",
      broken: ["one-seat-one-process", "nothing-to-fenced-seat"],
      when: "a restarted manager starts its running seats again beside the old processes",
    },
    { fix: "restart", kind: "kill-seat", broken: ["acknowledged-is-handed"], when: "a killed seat is not started again" },
    // The server's own (the nodes run the 2.10 the suite runs on): its consumers step past what a full disk did not store.
    { fix: "write-errors", kind: "disk-full", broken: ["acknowledged-is-handed"], when: "a node whose disk is full keeps leading consumers", schedules: 2 },
  ] as const;
  for (const c of switchedOff) {
    it(`reports ${c.broken.join(" and ")} when ${c.when} (${c.kind}, --fix-off ${c.fix})`, { timeout: 240_000 }, async () => {
      const r = await runFaults({
        seed: 1,
        schedules: "schedules" in c ? c.schedules : 1,
        fixOff: c.fix,
        natsServer: testNatsServer(),
        cotal,
        round: { healMs: 5_000, settleMs: 5_000 },
      });
      for (const x of r.rounds) expect(x.schedule.faults.map((f) => f.kind)).toEqual([c.kind]);
      const broken = new Set(r.rounds.flatMap((x) => x.violations.map((v) => v.invariant)));
      for (const invariant of c.broken) expect(broken.has(invariant), r.report).toBe(true);
    });
  }
});

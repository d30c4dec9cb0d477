// The fault suite inside `npm test`: two short schedules on real hosts (network namespaces: three
// cluster nodes, a leaf host with a manager and echo seats) keep every promise; and with the
// durability fix switched off (`sync_interval` back to the server's default) a power loss breaks
// one, and the checker says so. `npm run faults` runs the full budget (docs/reliability.md).
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { labUnavailable } from "../../testbed/faults/hosts.js";
import { runFaults } from "../../testbed/faults/run.js";
import { lazyFsMissing } from "../../testbed/lazyfs.js";
import { testNatsServer } from "../../testbed/nats-server.js";
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
});

// The connector bench (dist/bench-connector.mjs) in its smoke plan: the connector bundle joins on
// its first hook as under Claude, every hook of each transport and every raw request is answered
// `{}`, and the idle RSS rows are there beside the raw seat's.
import { existsSync } from "node:fs";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { bundlesIn, CONNECTOR_PLANS, connectorBench } from "../../bench/connector-hook.js";
import { ensureBuilt, projectRoot } from "../harness/build.js";
import { smoke } from "./smoke.js";

const bundles = bundlesIn(path.join(projectRoot, "dist"));

describe("bench: connector (dist/bench-connector.mjs)", () => {
  beforeAll(() => {
    ensureBuilt();
    if (!existsSync(bundles.rawHook)) throw new Error(`${bundles.rawHook} is missing: run npm run build`);
  }, 120_000);

  it("answers every command, relay, http and raw hook, and measures idle RSS beside the raw seat", async () => {
    const plan = CONNECTOR_PLANS.smoke;
    const r = await smoke(connectorBench, { ...plan, bundles }, [
      "command hook cotal",
      "command hook raw",
      "relay",
      "relay, a new tool",
      "http",
      "raw request",
    ]);
    expect(r.tallies["command hook cotal"]!.sent).toBe(plan.warmup + plan.command);
    expect(r.tallies.relay!.sent).toBe(plan.warmup * 10 + plan.inProcess);
    expect(r.rows.map((row) => row.name)).toEqual(
      expect.arrayContaining([
        "PreToolUse, command hook p50",
        "PreToolUse, relay in-process p50",
        "PreToolUse, http hook p50",
        "seat idle RSS",
        "seat idle RSS, plugin's flags",
      ]),
    );
  }, 120_000);
});

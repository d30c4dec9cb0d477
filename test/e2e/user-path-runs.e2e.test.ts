// One-shot runs on the user's path (issues #17, #26), through the shipped CLI only, beside what
// test/e2e/user-path-auth.e2e.test.ts covers (a plain run's output, cost and session; a timeout):
// `cotal up -d` from a shell holding the model double's URL, a key and COTAL_DAILY_BUDGET_USD (the
// cap reaches the manager up starts: `cotal budget` shows it); `cotal run --json-schema` returns
// the parsed output and is counted in `cotal budget`; a fan-out (`--parallel 3 --max-parallel 2`)
// returns every result with at most two at once; a manager started by hand with a daily cap just
// above the spend (`COTAL_DAILY_BUDGET_USD=… cotal manager`, as docs/runs.md shows) refuses a
// fan-out before anything starts while a single run passes.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunReply } from "../../schemas/index.js";
import { lastUserText, type RecordedRequest } from "../../testbed/model-double.js";
import { UserPath } from "../harness/user-path.js";

const MODEL = "claude-sonnet-4-5";
const CAP_USD = 50;
const SCHEMA = {
  type: "object",
  properties: { verdict: { type: "string" }, score: { type: "number" } },
  required: ["verdict", "score"],
  additionalProperties: false,
};

interface BudgetReply {
  daily: { runs: number; spentUsd: number; capUsd?: number; level: string };
  medianRunUsd: number;
}

let u: UserPath;

const asked = (word: string) => (r: RecordedRequest) => lastUserText(r).includes(word);
const budget = async (on?: string) => (await u.ok(["budget", "--json", ...(on ? ["--on", on] : [])])).json<BudgetReply>();
const run = async (args: string[]) => (await u.cotal(["run", "reviewer", ...args, "--json"])).json<RunReply>();

beforeAll(async () => {
  u = await UserPath.start({
    prefix: "cotal-user-runs-",
    agents: { reviewer: { fields: { name: "reviewer", model: MODEL }, body: "You review diffs." } },
    shell: { COTAL_DAILY_BUDGET_USD: String(CAP_USD) },
  });
  writeFileSync(join(u.project, "verdict.json"), JSON.stringify(SCHEMA));
}, 120_000);

afterAll(async () => {
  await u?.close();
});

describe("cotal run through the CLI: schemas, fan-outs and the daily cap", () => {
  it("cotal run --json-schema returns the parsed output, the cost and usage; cotal budget counts it against the cap cotal up passed on", async () => {
    u.double.push({ when: asked("REVIEW-OK"), reply: [{ tool: "StructuredOutput", input: { verdict: "ship it", score: 4 } }] });
    const before = await budget();
    const reply = await run(["--prompt", "REVIEW-OK this diff", "--json-schema", "verdict.json"]);
    expect(reply.results).toHaveLength(1);
    const r = reply.results[0]!;
    expect(r, JSON.stringify(r)).toMatchObject({
      status: "ok",
      output: { verdict: "ship it", score: 4 },
      persona: "reviewer",
      model: MODEL,
      modelSource: "agent-file",
      costBasis: "client-estimate",
    });
    expect(r.costUsd).toBeGreaterThan(0);
    expect(r.usage?.input_tokens).toBeGreaterThan(0);
    expect(r.sessionId).toMatch(/^[0-9a-f-]{36}$/);
    expect(r.error).toBeUndefined();
    const after = await budget();
    expect(after.daily.capUsd, "COTAL_DAILY_BUDGET_USD from cotal up's shell").toBe(CAP_USD);
    expect(after.daily.runs).toBe(before.daily.runs + 1);
    expect(after.daily.spentUsd).toBeCloseTo(before.daily.spentUsd + r.costUsd, 10);
  }, 120_000);

  it("a fan-out (--parallel 3 --max-parallel 2) returns every result, at most two at once", async () => {
    u.double.push(...Array.from({ length: 3 }, () => ({ when: asked("PAR-RUN"), reply: ["parallel done"], delayMs: 1_500 })));
    const reply = await run(["--prompt", "PAR-RUN now", "--parallel", "3", "--max-parallel", "2"]);
    expect(reply.results.map((r) => [r.status, r.output])).toEqual([
      ["ok", "parallel done"],
      ["ok", "parallel done"],
      ["ok", "parallel done"],
    ]);
    expect(new Set(reply.results.map((r) => r.runId)).size).toBe(3);
    const arrivals = u.double.mainRequests
      .filter(asked("PAR-RUN"))
      .map((r) => r.receivedAt)
      .sort((a, b) => a - b);
    expect(arrivals).toHaveLength(3);
    // Two started together; the third only once one of them had finished its 1.5 s turn.
    expect(arrivals[1]! - arrivals[0]!).toBeLessThan(1_500);
    expect(arrivals[2]! - arrivals[0]!).toBeGreaterThanOrEqual(1_400);
  }, 120_000);

  it("with a daily cap just above the spend, a fan-out of 3 is refused before anything starts (exit 1, every result skipped) while a single run passes", async () => {
    const b = await budget();
    expect(b.medianRunUsd).toBeGreaterThan(0);
    // One run of its own gives the capped manager its estimate (its own median), ~one run's cost:
    // then one more run fits under the cap and three do not.
    const cap = b.daily.spentUsd + b.medianRunUsd * 2.5;
    await u.startManager("capped", u.userShell(join(u.project, "home-capped"), { COTAL_DAILY_BUDGET_USD: String(cap) }));
    expect((await run(["--on", "capped", "--prompt", "FIRST"])).results[0]).toMatchObject({ status: "ok" });
    const capped = await budget("capped");
    expect(capped.daily.capUsd).toBeCloseTo(cap, 10);
    expect(capped.medianRunUsd).toBeGreaterThan(0);

    const mainBefore = u.double.mainRequests.length;
    const r = await u.cotal(["run", "reviewer", "--on", "capped", "--prompt", "FANOUT", "--parallel", "3", "--json"]);
    expect(r.code).toBe(1);
    const fanout = r.json<RunReply>();
    expect(fanout.refused, r.stdout).toMatchObject({ cap: "daily", capUsd: cap });
    expect(fanout.refused!.estimateUsd).toBeCloseTo(capped.medianRunUsd * 3, 10);
    expect(fanout.refused!.spentUsd).toBeCloseTo(capped.daily.spentUsd, 10);
    expect(fanout.refused!.message).toMatch(/daily cap.*spent.*estimated/);
    expect(fanout.results.map((x) => x.status)).toEqual(["skipped", "skipped", "skipped"]);
    expect(u.double.mainRequests.length, "nothing reached the model").toBe(mainBefore);

    const single = await run(["--on", "capped", "--prompt", "SINGLE"]);
    expect(single.refused).toBeUndefined();
    expect(single.results[0]!.status, JSON.stringify(single.results[0])).toBe("ok");
  }, 180_000);
});

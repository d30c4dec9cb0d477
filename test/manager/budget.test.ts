// Budget gates and run results as pure policy: the median estimate, the gauge levels,
// refusals that name the cap, the spend and the estimate, and the mapping of the Claude CLI's JSON
// result (a schema violation, a missing result, a kill and a timeout each differ).
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { budgetCaps, capsFromEnv, checkGates, gauge, headroom, levelOf, medianRunCost, type RunRecord } from "../../manager/internal.js";
import { runResultOf } from "../../claude/index.js";
import type { RunExit } from "../../runtime/index.js";

const DAY = Date.UTC(2026, 10, 30, 12);
const run = (costUsd: number, over: Partial<RunRecord> = {}): RunRecord => ({
  type: "run",
  seat: "cotal_run.r",
  uid: "r",
  epoch: 0,
  ts: DAY,
  status: "ok",
  costUsd,
  ...over,
});

describe("budget policy", () => {
  it("estimates N runs as the median cost of recent runs × N, 0 with no history, skipped runs not counted", () => {
    expect(medianRunCost([])).toBe(0);
    expect(medianRunCost([run(1), run(3), run(100)])).toBe(3);
    expect(medianRunCost([run(1), run(3)])).toBe(2);
    expect(medianRunCost([run(1), run(5, { status: "skipped" })])).toBe(1);
    // Only the last 20 runs count.
    const old = Array.from({ length: 30 }, (_, i) => run(100, { ts: DAY - 1_000 - i }));
    const recent = Array.from({ length: 20 }, (_, i) => run(1, { ts: DAY + i }));
    expect(medianRunCost([...old, ...recent])).toBe(1);
  });

  it("levels: ok < 50% ≤ info < 75% ≤ warning < 90% ≤ critical < 100% ≤ stop", () => {
    expect([0, 0.49, 0.5, 0.74, 0.75, 0.89, 0.9, 0.99, 1, 2].map(levelOf)).toEqual([
      "ok",
      "ok",
      "info",
      "info",
      "warning",
      "warning",
      "critical",
      "critical",
      "stop",
      "stop",
    ]);
  });

  it("the daily gauge counts today's (UTC) runs only; a task gauge counts its marker's runs", () => {
    const runs = [run(1), run(2, { ts: DAY - 86_400_000 }), run(4, { task: "pr-7" }), run(8, { task: "pr-7", ts: DAY - 86_400_000 })];
    expect(gauge(runs, "daily", 10, { now: DAY })).toEqual({ cap: "daily", spentUsd: 5, runs: 2, capUsd: 10, share: 0.5, level: "info" });
    expect(gauge(runs, "task", 12, { now: DAY, task: "pr-7" })).toEqual({
      cap: "task",
      task: "pr-7",
      spentUsd: 12,
      runs: 2,
      capUsd: 12,
      share: 1,
      level: "stop",
    });
    expect(gauge(runs, "daily", undefined, { now: DAY })).toEqual({ cap: "daily", spentUsd: 5, runs: 2 });
  });

  it("refuses when spent + estimate passes a cap, or the cap is reached, saying which cap, the spend and the estimate", () => {
    const runs = [run(1), run(1)];
    expect(checkGates(runs, { dailyUsd: 3.5 }, { now: DAY, estimateUsd: 1 })).toBeUndefined();
    const r = checkGates(runs, { dailyUsd: 3.5 }, { now: DAY, estimateUsd: 3 });
    expect(r).toMatchObject({ cap: "daily", capUsd: 3.5, spentUsd: 2, estimateUsd: 3 });
    expect(r!.message).toBe("Refused by the daily cap (UTC 2026-11-30): $2.0000 spent + $3.0000 estimated would pass $3.5000; nothing was started.");
    expect(checkGates(runs, { dailyUsd: 2 }, { now: DAY, estimateUsd: 0 })).toMatchObject({ cap: "daily" });
    // Runs in flight count as spent.
    expect(checkGates(runs, { dailyUsd: 3.5 }, { now: DAY, estimateUsd: 1, reserved: { dailyUsd: 1, taskUsd: 0 } })!.message).toMatch(
      /runs in flight included/,
    );
    // The task cap counts only its chain, and only when a marker is given.
    const chain = [run(5, { task: "a" }), run(5, { task: "b" })];
    expect(checkGates(chain, { taskUsd: 6 }, { now: DAY, estimateUsd: 0.5 })).toBeUndefined();
    expect(checkGates(chain, { taskUsd: 6 }, { now: DAY, task: "a", estimateUsd: 0.5 })).toBeUndefined();
    expect(checkGates(chain, { taskUsd: 6 }, { now: DAY, task: "a", estimateUsd: 2 })).toMatchObject({ cap: "task", task: "a", spentUsd: 5, estimateUsd: 2 });
    expect(checkGates(chain, { dailyUsd: 100, taskUsd: 6 }, { now: DAY, task: "a", estimateUsd: 2 })!.message).toMatch(/the cap of task a/);
  });

  it("a run may spend at most the smallest headroom left; no cap, no limit", () => {
    const runs = [run(1, { task: "a" })];
    expect(headroom(runs, {}, { now: DAY, reserved: { dailyUsd: 0, taskUsd: 0 } })).toBeUndefined();
    expect(headroom(runs, { dailyUsd: 5, taskUsd: 3 }, { now: DAY, task: "a", reserved: { dailyUsd: 1, taskUsd: 0 } })).toBe(2);
    expect(headroom(runs, { dailyUsd: 0.5 }, { now: DAY, reserved: { dailyUsd: 0, taskUsd: 0 } })).toBe(0);
  });

  it("reads the caps from COTAL_DAILY_BUDGET_USD and COTAL_TASK_BUDGET_USD, ignoring what is not a number", () => {
    expect(capsFromEnv({ COTAL_DAILY_BUDGET_USD: "2.5", COTAL_TASK_BUDGET_USD: "x" })).toEqual({ dailyUsd: 2.5, taskUsd: undefined });
    expect(capsFromEnv({})).toEqual({ dailyUsd: undefined, taskUsd: undefined });
  });

  it("the mesh's .cotal/budget.json gives the caps the environment does not; an invalid one is refused, naming the field", () => {
    const dir = mkdtempSync(join(tmpdir(), "cotal-budget-"));
    try {
      const file = join(dir, "budget.json");
      expect(budgetCaps({}, file)).toEqual({ dailyUsd: undefined, taskUsd: undefined });
      writeFileSync(file, JSON.stringify({ dailyUsd: 5, taskUsd: 1 }));
      expect(budgetCaps({}, file)).toEqual({ dailyUsd: 5, taskUsd: 1 });
      expect(budgetCaps({ COTAL_DAILY_BUDGET_USD: "2" }, file)).toEqual({ dailyUsd: 2, taskUsd: 1 });
      writeFileSync(file, JSON.stringify({ dailyUsd: -1 }));
      expect(() => budgetCaps({}, file)).toThrow(/Invalid budget config .*dailyUsd/);
      writeFileSync(file, JSON.stringify({ daily: 3 }));
      expect(() => budgetCaps({}, file)).toThrow(/daily/);
      writeFileSync(file, "{");
      expect(() => budgetCaps({}, file)).toThrow(/not valid JSON/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("the caps follow .cotal/budget.json while the manager runs (`cotal up -f` rewrites it): written, changed, removed, made invalid", () => {
    const dir = mkdtempSync(join(tmpdir(), "cotal-budget-"));
    try {
      const file = join(dir, "budget.json");
      const caps = budgetCaps({ COTAL_TASK_BUDGET_USD: "0.5" }, file);
      expect([caps.dailyUsd, caps.taskUsd]).toEqual([undefined, 0.5]);
      writeFileSync(file, JSON.stringify({ dailyUsd: 5, taskUsd: 1 }));
      expect([caps.dailyUsd, caps.taskUsd]).toEqual([5, 0.5]); // the environment still wins
      writeFileSync(file, JSON.stringify({ dailyUsd: 12.25 }));
      expect(caps.dailyUsd).toBe(12.25);
      writeFileSync(file, JSON.stringify({ dailyUsd: "lots" }));
      expect(() => caps.dailyUsd).toThrow(/Invalid budget config .*dailyUsd/);
      rmSync(file);
      expect(caps.dailyUsd).toBeUndefined();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("run results", () => {
  const spec = { runId: "r1", persona: "reviewer", model: "m", modelSource: "explicit" as const, timeoutMs: 30_000 };
  const exit = (over: Partial<RunExit>): RunExit => ({ code: 0, signal: null, timedOut: false, stdout: "", stderr: "", latencyMs: 12, ...over });
  const json = (o: Record<string, unknown>) =>
    JSON.stringify({
      subtype: "success",
      is_error: false,
      session_id: "s",
      total_cost_usd: 0.25,
      usage: { input_tokens: 10, output_tokens: 2, extra: 1 },
      permission_denials: [],
      ...o,
    });

  it("ok: text, or the structured output when a schema was given; cost, usage, session and denials as the CLI reported", () => {
    expect(runResultOf(spec, exit({ stdout: json({ result: "hi", permission_denials: [{ tool_name: "Write" }, { tool_name: "Write" }] }) }))).toEqual({
      runId: "r1",
      persona: "reviewer",
      status: "ok",
      output: "hi",
      costUsd: 0.25,
      costBasis: "client-estimate",
      usage: { input_tokens: 10, output_tokens: 2 },
      sessionId: "s",
      latencyMs: 12,
      model: "m",
      modelSource: "explicit",
      permissionDenials: ["Write"],
    });
    expect(runResultOf({ ...spec, jsonSchema: {} }, exit({ stdout: json({ result: "{}", structured_output: { a: 1 } }) }))).toMatchObject({
      status: "ok",
      output: { a: 1 },
    });
  });

  it("a schema violation, a missing result, a kill, a timeout and a budget stop each map to their own status and kind", () => {
    const kind = (s: Parameters<typeof runResultOf>[0], e: RunExit) => {
      const r = runResultOf(s, e);
      return [r.status, r.error?.kind];
    };
    expect(kind(spec, exit({ code: 1, stdout: json({ subtype: "error_max_structured_output_retries", is_error: true, errors: ["bad"] }) }))).toEqual([
      "error",
      "schema-violation",
    ]);
    expect(kind({ ...spec, jsonSchema: {} }, exit({ stdout: json({ result: "text" }) }))).toEqual(["error", "no-result"]);
    expect(kind(spec, exit({ code: 1, stdout: "", stderr: "boom" }))).toEqual(["error", "no-result"]);
    expect(kind(spec, exit({ code: null, signal: "SIGKILL" }))).toEqual(["error", "killed"]);
    expect(kind(spec, exit({ code: null, signal: "SIGTERM", timedOut: true }))).toEqual(["timeout", "timeout"]);
    expect(kind(spec, exit({ code: 1, stdout: json({ subtype: "error_max_budget_usd", is_error: true }) }))).toEqual(["error", "budget"]);
    expect(kind(spec, exit({ code: 1, stdout: json({ subtype: "error_during_execution", is_error: true }) }))).toEqual(["error", "failed"]);
    expect(runResultOf(spec, exit({ code: 1, stdout: "", stderr: "boom" })).error!.message).toMatch(/code 1 without a JSON result: boom/);
  });

  it("a run Claude reported no cost for (killed, timed out) counts at the median of recent runs, labelled so, never as free", () => {
    const killed = runResultOf({ ...spec, fallbackCostUsd: 0.07 }, exit({ code: null, signal: "SIGTERM", timedOut: true }));
    expect(killed).toMatchObject({ status: "timeout", costUsd: 0.07, costBasis: "median-estimate" });
    expect(runResultOf({ ...spec, fallbackCostUsd: 0.07 }, exit({ stdout: json({ result: "x" }) }))).toMatchObject({
      costUsd: 0.25,
      costBasis: "client-estimate",
    });
  });
});

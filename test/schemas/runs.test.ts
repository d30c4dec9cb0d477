// One-shot runs on the wire: how a cost is worded for people, the bounds of a run request, task
// markers, and the budget file that refuses what it does not know.
import { describe, expect, it } from "vitest";
import { BudgetConfig, COST_BASIS, describeCost, RunArgs, RunResult, TaskMarker } from "../../schemas/index.js";

describe("describeCost", () => {
  it("says what a cost rests on", () => {
    expect(describeCost({ costUsd: 0.01234, costBasis: COST_BASIS })).toBe("$0.0123 (client-side estimate)");
    expect(describeCost({ costUsd: 0.5, costBasis: "median-estimate" })).toBe("$0.5000 (median of recent runs: its CLI reported no cost)");
    expect(describeCost({ costUsd: 0, costBasis: "usage" })).toBe("unpriced (the CLI reports token usage, not dollars)");
  });
});

describe("RunArgs", () => {
  const ok = { personas: ["reviewer"], prompt: "review this" };

  it("defaults a five-minute timeout, one copy each and four at once", () => {
    expect(RunArgs.parse(ok)).toEqual({ ...ok, timeoutMs: 300_000, parallel: 1, maxParallel: 4 });
  });

  it("bounds: 1 to 32 personas, a prompt of 1 to 100,000 characters, a timeout of 1 s to 1 h, 1 to 32 copies", () => {
    const bad = [
      { ...ok, personas: [] },
      { ...ok, personas: Array.from({ length: 33 }, (_, i) => `p${i}`) },
      { ...ok, personas: ["a.b"] },
      { ...ok, prompt: "" },
      { ...ok, prompt: "x".repeat(100_001) },
      { ...ok, timeoutMs: 999 },
      { ...ok, timeoutMs: 3_600_001 },
      { ...ok, parallel: 0 },
      { ...ok, parallel: 33 },
      { ...ok, maxParallel: 33 },
      { ...ok, cwd: "" },
    ];
    for (const args of bad) expect(RunArgs.safeParse(args).success, JSON.stringify(args).slice(0, 80)).toBe(false);
    const edges = [
      { ...ok, personas: Array.from({ length: 32 }, (_, i) => `p${i}`) },
      { ...ok, prompt: "x".repeat(100_000) },
      { ...ok, timeoutMs: 1_000 },
      { ...ok, timeoutMs: 3_600_000 },
      { ...ok, parallel: 32, maxParallel: 32 },
    ];
    for (const args of edges) expect(RunArgs.safeParse(args).success).toBe(true);
  });
});

describe("TaskMarker", () => {
  it("1 to 128 of letters, digits, '_', '.', ':' and '-', and says so", () => {
    expect(TaskMarker.safeParse("fix-42:step_1.a").success).toBe(true);
    expect(TaskMarker.safeParse("x".repeat(128)).success).toBe(true);
    expect(TaskMarker.safeParse("x".repeat(129)).success).toBe(false);
    const spaced = TaskMarker.safeParse("two words");
    expect(spaced.success).toBe(false);
    expect(spaced.error?.issues[0]?.message).toBe("a task marker is 1-128 letters, digits, '_', '.', ':' or '-'");
    expect(TaskMarker.safeParse("").success).toBe(false);
  });
});

describe("RunResult", () => {
  it("a cost is never negative and the latency is whole milliseconds", () => {
    const r = { runId: "r1", status: "ok", costUsd: 0, costBasis: COST_BASIS, latencyMs: 10, modelSource: "default", permissionDenials: [] };
    expect(RunResult.safeParse(r).success).toBe(true);
    expect(RunResult.safeParse({ ...r, costUsd: -1 }).success).toBe(false);
    expect(RunResult.safeParse({ ...r, latencyMs: 1.5 }).success).toBe(false);
    expect(RunResult.safeParse({ ...r, error: { kind: "overheated", message: "x" } }).success).toBe(false);
  });
});

describe("BudgetConfig", () => {
  it("takes the two caps and refuses any other key (a typo is not a missing cap)", () => {
    expect(BudgetConfig.parse({ dailyUsd: 5, taskUsd: 1 })).toEqual({ dailyUsd: 5, taskUsd: 1 });
    expect(BudgetConfig.safeParse({ dailyUSD: 5 }).success).toBe(false);
    expect(BudgetConfig.safeParse({ dailyUsd: -1 }).success).toBe(false);
  });
});

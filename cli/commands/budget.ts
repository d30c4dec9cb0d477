import type { Command } from "commander";
import { z } from "zod";
import { credsCaller } from "../../broker/index.js";
import { ManagerInstance, TaskMarker, type BudgetGauge } from "../../schemas/index.js";
import { jsonOption, meshOptions, resolveTarget } from "../mesh-client/mesh-target.js";
import { EXIT } from "../terminal/errors.js";
import { callManager } from "../mesh-client/manager-calls.js";
import { printJson, printLines } from "../terminal/output.js";
import { withSession } from "../mesh-client/session.js";
import { parseInput } from "../terminal/validate.js";

function gaugeLine(what: string, g: BudgetGauge): string {
  const spent = `$${g.spentUsd.toFixed(4)} in ${g.runs} run${g.runs === 1 ? "" : "s"}`;
  if (g.capUsd === undefined) return `${what}: ${spent}, no cap`;
  return `${what}: ${spent} of $${g.capUsd.toFixed(4)} (${Math.round((g.share ?? 0) * 100)}%, ${g.level})`;
}

/** `cotal budget`: the daily and per-task gauges, from the runs the seat log recorded. */
export function registerBudget(program: Command): void {
  const cmd = program
    .command("budget")
    .summary("show the run budget gauges: today (UTC) against the daily cap, and per task marker")
    .description(
      "Ask a manager for the budget gauges, computed from the runs the seat log recorded (every manager sees the same): " +
        "today's (UTC) run costs against the daily cap, and each task marker's against the per-task cap. Levels: " +
        "ok < 50% ≤ info < 75% ≤ warning < 90% ≤ critical < 100% ≤ stop (runs are refused). Costs are the Claude CLI's " +
        "client-side estimates. Exit 1 when a gauge is at stop.",
    )
    .option("--task <marker>", "show this task marker's gauge (default: every marker with runs today)")
    .option("--on <instance>", "the manager to ask (default: any)");
  jsonOption(meshOptions(cmd)).action(async (raw: Record<string, unknown>) => {
    const f = parseInput(z.object({ task: TaskMarker.optional(), on: ManagerInstance.optional(), json: z.boolean().optional() }), raw);
    const target = resolveTarget(raw);
    const b = await withSession(target, (s) =>
      callManager(s.nc, target.space, "budget", credsCaller(target.creds), f.task ? { task: f.task } : {}, { target: f.on ?? "one", timeoutMs: 30_000 }),
    );
    if (f.json) printJson(b);
    else {
      printLines(
        gaugeLine(`today (UTC ${b.day})`, b.daily),
        ...b.tasks.map((t) => gaugeLine(`task ${t.task ?? "?"}`, t)),
        `median run: $${b.medianRunUsd.toFixed(4)} (the per-run estimate); costs are the Claude CLI's client-side estimates`,
      );
    }
    if ([b.daily, ...b.tasks].some((g) => g.level === "stop")) process.exitCode = EXIT.failed;
  });
}

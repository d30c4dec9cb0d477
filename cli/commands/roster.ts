import type { Command } from "commander";
import { z } from "zod";
import { jsonOption, meshOptions, resolveTarget } from "../context.js";
import { rosterJson, rosterTable } from "../format.js";
import { printJson, printLines } from "../output.js";
import { withSession } from "../session.js";
import { parseInput } from "../validate.js";

/** `cotal roster`: who is in the space. */
export function registerRoster(program: Command): void {
  const cmd = program
    .command("roster")
    .summary("show who is in the space, with status and activity")
    .description(
      "Show everyone who has presence in the space: name, role, status (idle, waiting, working, offline), " +
        "condition and activity. Anyone silent for more than 6 s shows as offline.",
    );
  jsonOption(meshOptions(cmd)).action(async (raw: Record<string, unknown>) => {
    const f = parseInput(z.object({ json: z.boolean().optional() }), raw);
    const target = resolveTarget(raw);
    const rows = await withSession(target, async (s) => {
      const now = Date.now();
      return (await s.roster()).entries(now).map((e) => rosterJson(e, now));
    });
    if (f.json) printJson(rows);
    else if (rows.length === 0) printLines("Nobody has joined this space yet.");
    else printLines(...rosterTable(rows));
  });
}

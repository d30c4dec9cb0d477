import type { Command } from "commander";
import { z } from "zod";
import { jsonOption, meshOptions, resolveTarget } from "../context.js";
import { rosterJson, type RosterRow } from "../format.js";
import { ago, oneLine, printJson, printLines, table } from "../output.js";
import { withSession } from "../session.js";
import { parseInput } from "../validate.js";

/** A roster row with the seat's unread count (mail waiting that its agent has not been shown), when it publishes one. */
type RosterRowWithUnread = RosterRow & { unread?: number };

/** The roster as an aligned table: name, role, status, unread, activity, last seen. */
function rosterTableWithUnread(rows: RosterRowWithUnread[]): string[] {
  return table(
    ["NAME", "ROLE", "STATUS", "UNREAD", "ACTIVITY", "SEEN"],
    rows.map((r) => [
      oneLine(r.name),
      r.role ?? "-",
      r.condition && r.status !== "offline" ? `${r.status} (${r.condition})` : r.status,
      r.unread === undefined ? "-" : String(r.unread),
      oneLine(r.activity ?? "-"),
      ago(r.lastSeenAgoMs),
    ]),
  );
}

/** `cotal roster`: who is in the space. */
export function registerRoster(program: Command): void {
  const cmd = program
    .command("roster")
    .summary("show who is in the space, with status, unread mail and activity")
    .description(
      "Show everyone who has presence in the space: name, role, status (idle, waiting, working, offline), " +
        "condition, unread mail (messages waiting that the agent has not been shown yet, for seats that report it) " +
        "and activity. Anyone silent for more than 6 s shows as offline.",
    );
  jsonOption(meshOptions(cmd)).action(async (raw: Record<string, unknown>) => {
    const f = parseInput(z.object({ json: z.boolean().optional() }), raw);
    const target = resolveTarget(raw);
    const rows = await withSession(target, async (s) => {
      const now = Date.now();
      return (await s.roster()).entries(now).map((e): RosterRowWithUnread => {
        const unread = e.status !== "offline" ? e.presence.unread : undefined;
        return { ...rosterJson(e, now), ...(unread !== undefined ? { unread } : {}) };
      });
    });
    if (f.json) printJson(rows);
    // Presence of those who left expires, so an empty roster cannot tell "never" from "all gone".
    else if (rows.length === 0) printLines("Nobody is here: no one has presence in this space now.");
    else printLines(...rosterTableWithUnread(rows));
  });
}

import type { Command } from "commander";
import { z } from "zod";
import { jsonOption, meshOptions, resolveTarget } from "../mesh-client/mesh-target.js";
import { rosterJson, type RosterRow } from "../terminal/format.js";
import { ago, oneLine, printJson, printLines, table } from "../terminal/output.js";
import { credsCaller } from "../../broker/index.js";
import { isOperator } from "../../manager/index.js";
import { seatsOfManagers } from "../mesh-client/manager-calls.js";
import { credentialScope } from "../identity/credential-scope.js";
import { withSession, type MeshSession } from "../mesh-client/session.js";
import { parseInput } from "../terminal/validate.js";

/**
 * A roster row with the seat's unread count (mail waiting that its agent has not been shown), when it
 * publishes one, and, for a helper, the agent that answers for it (from its manager, never its card).
 */
type RosterRowWithUnread = RosterRow & { unread?: number; spawnedBy?: string };

/**
 * Who each helper answers to, by seat id, as the managers' `ps` says (docs/manager.md, Helpers). A
 * credential but the operator's gets none; a manager that does not answer adds none.
 */
async function spawners(s: MeshSession): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  // Only the operator's and a person's credential ask: the broker refuses others the managers bucket or
  // their `ps`, and each refusal is a violation in the server's log (test/cli/profiles-offhost.e2e.test.ts).
  const person = s.target.creds !== undefined && credentialScope(s.target.creds)?.profile === "person";
  if (!isOperator(credsCaller(s.target.creds)) && !person) return out;
  try {
    for (const m of await seatsOfManagers(s, {})) if ("seats" in m) for (const v of m.seats) if (v.spawnedBy) out.set(v.seat, v.spawnedBy);
  } catch {
    // Not readable with this credential: the column stays empty.
  }
  return out;
}

/** The roster as an aligned table: name, role, runtime, status, unread, activity, last seen. */
function rosterTableWithUnread(rows: RosterRowWithUnread[]): string[] {
  return table(
    ["NAME", "ROLE", "RUNTIME", "STATUS", "UNREAD", "ACTIVITY", "SEEN", "SPAWNED BY"],
    rows.map((r) => [
      oneLine(r.name),
      oneLine(r.role ?? "-"),
      oneLine(r.runtime ?? "-"),
      r.condition && r.status !== "offline" ? `${r.status} (${r.condition})` : r.status,
      r.unread === undefined ? "-" : String(r.unread),
      oneLine(r.activity ?? "-"),
      ago(r.lastSeenAgoMs),
      oneLine(r.spawnedBy ?? "-"),
    ]),
  );
}

/** `cotal roster`: who is in the space. */
export function registerRoster(program: Command): void {
  const cmd = program
    .command("roster")
    .summary("show who is in the space, with runtime, status, unread mail and activity")
    .description(
      "Show everyone who has presence in the space: name, role, the agent CLI a seat runs (claude, codex, echo), status (idle, waiting, working, offline), " +
        "condition, unread mail (messages waiting that the agent has not been shown yet, for seats that report it) " +
        "and activity. Anyone silent for more than 6 s shows as offline.",
    );
  jsonOption(meshOptions(cmd)).action(async (raw: Record<string, unknown>) => {
    const f = parseInput(z.object({ json: z.boolean().optional() }), raw);
    const target = resolveTarget(raw, undefined, {});
    const rows = await withSession(target, async (s) => {
      const now = Date.now();
      const by = await spawners(s);
      return (await s.roster()).entries(now).map((e): RosterRowWithUnread => {
        const unread = e.status !== "offline" ? e.presence.unread : undefined;
        const spawnedBy = by.get(e.id);
        return { ...rosterJson(e, now), ...(unread !== undefined ? { unread } : {}), ...(spawnedBy ? { spawnedBy } : {}) };
      });
    });
    if (f.json) printJson(rows);
    // Presence of those who left expires, so an empty roster cannot tell "never" from "all gone".
    else if (rows.length === 0) printLines("Nobody is here: no one has presence in this space now.");
    else printLines(...rosterTableWithUnread(rows));
  });
}

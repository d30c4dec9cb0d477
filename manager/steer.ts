import type { MANAGER_COMMANDS, SpawnGrant, TableParsedArgs } from "../schemas/index.js";
import { SeatRefusedError } from "./errors.js";
import { refuseOperatorOnly } from "./helpers.js";
import type { RunService } from "./runs.js";
import { holdsName, type SeatRecord } from "./seat-table.js";

/**
 * The steer right (docs/security.md, People): a person minted with it (`cotal mint NAME --profile
 * person --steer`; `cotal up` mints the person at the mesh host so) may, as itself, spawn a seat
 * from a persona (an agent file of the manager's folder, where a team file's seats are described
 * too), list the personas, and stop a seat spawned from a persona; restarting is stopping and
 * spawning the same persona again. What the operator alone chooses (cwd, resume, rights of the
 * seat's own credential) stays the operator's; a seat started without a persona is the operator's
 * to stop. Seats it spawns record it as `spawnedBy`.
 */
export function steers(grant: SpawnGrant): boolean {
  return grant.minted && grant.profile === "person" && grant.steer === true;
}

/** Admit a steering person's spawn before anything is claimed: a persona, no operator-only argument, the budget gates. */
export async function admitSteered(a: TableParsedArgs<typeof MANAGER_COMMANDS, "spawn">, steerer: string, runs: RunService | undefined): Promise<void> {
  refuseOperatorOnly(steerer, a);
  if (a.persona === undefined)
    throw new SeatRefusedError(
      "steer-persona-only",
      `${steerer} steers seats from personas: name one (an agent file of the manager's folder; \`personas\` lists them). Nothing was started.`,
      "Pass a persona; a seat without one is the operator's to spawn (`cotal spawn`).",
    );
  const refused = await runs?.spawnGate(a.agent !== "echo");
  if (refused)
    throw new SeatRefusedError("budget", refused.message, "Wait for the next UTC day, or ask the operator to raise the cap (`cotal budget`, docs/runs.md).");
}

/** The seat a steering person may stop: one of this manager's, spawned from a persona (or by them). */
export function steerableSeat(r: SeatRecord | undefined, name: string, steerer: string, instance: string): SeatRecord {
  if (!r || !holdsName(r) || r.manager !== instance)
    throw new SeatRefusedError(
      "no-such-seat",
      `No seat named ${name} runs on manager ${instance}; nothing was stopped.`,
      "See `cotal ps` for the seats and the manager each runs on.",
    );
  if (r.persona === undefined && r.spawnedBy !== steerer)
    throw new SeatRefusedError(
      "not-steerable",
      `${name} was not spawned from a persona: it is the operator's to stop, not ${steerer}'s; nothing was stopped.`,
      "Ask the operator (`cotal stop`).",
    );
  return r;
}

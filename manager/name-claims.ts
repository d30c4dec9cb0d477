import type { Logger } from "../broker/index.js";
import { parsePrincipal, type Principal, type SeatAgent, type TerminalHost } from "../schemas/index.js";
import { SeatRefusedError, StaleSeatLogError } from "./errors.js";
import type { SeatTableAccess } from "./manager-context.js";
import type { SeatHistory, SeatLog } from "./seat-log.js";
import { holdsName, type SeatRecord } from "./seat-table.js";

/** What claiming a seat's name needs of the manager. */
export interface NameClaimContext extends Pick<SeatTableAccess, "seats" | "append"> {
  /** The seat log a claim is read back from (who won it). */
  readonly seatLog: Pick<SeatLog, "history">;
  /** Fold a seat's history into the table (its projection, and this manager's fence token on it). */
  learn(h: SeatHistory): SeatRecord | undefined;
  readonly log: Logger;
}

/** The incarnation a name is claimed for: the `requested` record's fields. */
export interface NameClaim {
  uid: string;
  agent: SeatAgent;
  role?: string | undefined;
  persona?: string | undefined;
  caller: Principal;
  requestId?: string | undefined;
  spec: SeatRecord["spec"];
  spawnedBy?: string;
  spawnerUid?: string;
  allowSpawn?: string[];
  spawnLimit?: number;
}

/**
 * Claim `base` (or `base_2`, `base_3`…) by appending `requested` to its log: the append's
 * expected sequence makes two managers claiming one name at once fail all but one.
 */
export async function claimName(c: NameClaimContext, base: string, r: NameClaim): Promise<{ name: string; seat: string }> {
  for (let n = 1; n <= 99; n++) {
    const name = n === 1 ? base : `${base}_${n}`;
    const seat = `local.${name}`;
    const held = c.seats.get(seat);
    if (held && holdsName(held)) continue;
    try {
      await c.append(seat, {
        type: "requested",
        seat,
        uid: r.uid,
        epoch: 0,
        ts: Date.now(),
        agent: r.agent,
        ...(r.role ? { role: r.role } : {}),
        ...(r.persona ? { persona: r.persona } : {}),
        by: `${r.caller.owner}.${r.caller.actor}`,
        ...(r.requestId ? { requestId: r.requestId } : {}),
        ...(r.spec.terminal ? { terminal: r.spec.terminal as TerminalHost } : {}),
        ...(r.spec.cwd ? { cwd: r.spec.cwd } : {}),
        ...(r.spec.model ? { model: r.spec.model } : {}),
        channels: r.spec.channels,
        ...(r.spec.restarts !== undefined ? { restarts: r.spec.restarts } : {}),
        ...(r.spec.windowMs !== undefined ? { windowMs: r.spec.windowMs } : {}),
        ...(r.spec.carried ? { carried: r.spec.carried } : {}),
        ...(r.spec.personaDigest ? { personaDigest: r.spec.personaDigest } : {}),
        ...(r.spec.posture ? { posture: r.spec.posture } : {}),
        ...(r.spawnedBy ? { spawnedBy: r.spawnedBy } : {}),
        ...(r.spawnerUid ? { spawnerUid: r.spawnerUid } : {}),
        ...(r.allowSpawn ? { allowSpawn: r.allowSpawn } : {}),
        ...(r.spawnLimit !== undefined ? { spawnLimit: r.spawnLimit } : {}),
      });
      // Each manager writes its own subject, so the broker cannot refuse a second claim: the log's
      // order decides (projectSeat), the first claim of a free name wins. Read back who won.
      const h = await c.seatLog.history(parsePrincipal(seat));
      if (h && c.learn(h)?.uid === r.uid) return { name, seat };
      c.log.info({ seat }, "another manager claimed the name first; trying the next");
    } catch (err) {
      if (!(err instanceof StaleSeatLogError)) throw err;
      await refresh(c, seat); // another process of this instance wrote it: learn what, then try the next number
    }
  }
  throw new SeatRefusedError(
    "name-taken",
    `Every name from ${base} to ${base}_99 is held; nothing was started.`,
    "Stop seats you no longer need, or pick another --name.",
  );
}

/** Learn what another process of this instance wrote to a seat's log. */
async function refresh(c: NameClaimContext, seat: string): Promise<void> {
  const h = await c.seatLog.history(parsePrincipal(seat));
  if (h) c.learn(h);
}

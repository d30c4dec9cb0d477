import type { Logger } from "../broker/index.js";
import { parsePrincipal, principalId, type MANAGER_COMMANDS, type Principal, type TableParsedArgs } from "../schemas/index.js";
import { loadAgentFile } from "../runtimes/index.js";
import { SeatRefusedError } from "./errors.js";
import { refuseOverLimit, refuseUngranted, refuseWider, seatScope, widerThan } from "./helpers.js";
import type { SeatTableAccess } from "./manager-context.js";
import type { SpawnAdmission } from "./spawn-admission.js";
import type { SeatRecord } from "./seat-table.js";
import { seatName } from "./seat-views.js";

/** What handing a helper over needs of the manager. */
export interface HandoverContext extends Pick<SeatTableAccess, "append"> {
  /** The grant and spawner state the agent it goes to is judged by, as a spawn of it would be. */
  readonly admission: Pick<SpawnAdmission, "grantOf" | "spawnerState" | "placeOf" | "spawnerFile">;
  /** The seat of this manager `caller` may change, refused otherwise (manager-service.ts). */
  ownedSeat(name: string, caller: Principal, what: string): SeatRecord;
  readonly log: Logger;
}

/**
 * Hand a helper over (docs/manager.md, Helpers): its spawner (or the operator) makes another agent
 * answer for it, who must be allowed to spawn its persona, within that agent's limit and scope;
 * or, with no `to`, the operator. Either way it no longer retires with its spawner.
 */
export async function handover(c: HandoverContext, a: TableParsedArgs<typeof MANAGER_COMMANDS, "handover">, caller: Principal) {
  const seat = `local.${a.name}`;
  const r = c.ownedSeat(a.name, caller, "handed over");
  const from = r.spawnedBy;
  if (!from)
    throw new SeatRefusedError(
      "not-a-helper",
      `${a.name} is not a helper: no agent answers for it (the operator does); nothing changed.`,
      "Only helpers are handed over (`cotal ps` names who spawned each).",
    );
  if (a.to === from)
    throw new SeatRefusedError(
      "not-a-handover",
      `${from} already answers for ${a.name}; nothing changed.`,
      "Name another agent, or leave `to` out for the operator.",
    );
  let toUid: string | undefined;
  if (a.to) {
    const grant = await c.admission.grantOf(parsePrincipal(a.to));
    refuseUngranted(a.to, grant, r.persona);
    const { spawner, helpers } = await c.admission.spawnerState(a.to);
    const cwd = c.admission.placeOf(a.to, spawner);
    refuseOverLimit(
      a.to,
      grant,
      helpers.map((h) => seatName(h.seat)),
    );
    const fm = loadAgentFile(r.spec.cwd ?? cwd, r.persona).frontmatter;
    refuseWider(
      a.to,
      r.persona,
      widerThan({ ...seatScope({ role: r.role, channels: r.spec.channels }, fm), agent: r.agent, fm }, grant, c.admission.spawnerFile(spawner)),
    );
    toUid = spawner?.uid;
  }
  await c.append(seat, {
    type: "handed-over",
    seat,
    uid: r.uid,
    epoch: r.epoch,
    ts: Date.now(),
    from,
    ...(a.to ? { to: a.to } : {}),
    ...(toUid ? { toUid } : {}),
  });
  c.log.info({ seat, from, to: a.to ?? "the operator", by: principalId(caller) }, "helper handed over");
  return { seat, uid: r.uid, from, ...(a.to ? { to: a.to } : {}) };
}

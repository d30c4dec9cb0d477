import type { Principal, SeatView } from "../schemas/index.js";
import { redactHostPaths } from "./host-paths.js";
import { presenceOf, type LiveSeat } from "./live-seat.js";
import { isOperator } from "./runs.js";
import { holdsName, type SeatRecord } from "./seat-table.js";

/** Where the views are read: this manager, its state folder, and how long a launch may take. */
export interface ViewsOf {
  instance: string;
  stateDir: string;
  readinessMs?: number | undefined;
}

/** A seat's actor name (`local.bob` → `bob`): its terminal window and its folder are named by it. */
export function seatName(seat: string): string {
  return seat.slice(seat.indexOf(".") + 1);
}

/** A seat's state as ps says it: `uncertain` while launched past the readiness wait. */
export function seatState(r: SeatRecord, readinessMs = 30_000): SeatView["state"] {
  if (r.state === "launched" && Date.now() - r.since > readinessMs) return "uncertain";
  return r.state;
}

/**
 * The seats `ps` answers. How a person opens a seat's terminal is not in it: `cotal attach` builds
 * that on the manager's host from its own state (attach.ts), and a reply is readable by observers.
 * For anyone but the operator, the text a seat's failure carries (its reason, its last output, its
 * condition's message) names this host's paths by what they are (host-paths.ts), as a run's error does.
 */
export function seatViews(seats: Iterable<SeatRecord>, live: ReadonlyMap<string, LiveSeat>, at: ViewsOf, all: boolean, caller: Principal): SeatView[] {
  const views = allViews(seats, live, at, all);
  if (isOperator(caller)) return views;
  const hide = (text: string) => redactHostPaths(text, { stateDir: at.stateDir, cwd: process.cwd() });
  return views.map((v) => ({
    ...v,
    ...(v.reason ? { reason: hide(v.reason) } : {}),
    ...(v.exit?.output ? { exit: { ...v.exit, output: hide(v.exit.output) } } : {}),
    ...(v.presence?.message ? { presence: { ...v.presence, message: hide(v.presence.message) } } : {}),
  }));
}

function allViews(seats: Iterable<SeatRecord>, live: ReadonlyMap<string, LiveSeat>, at: ViewsOf, all: boolean): SeatView[] {
  return [...seats]
    .filter((r) => r.manager === at.instance && (all || holdsName(r)))
    .map((r) => ({
      seat: r.seat,
      name: seatName(r.seat),
      uid: r.uid,
      epoch: r.epoch,
      state: seatState(r, at.readinessMs),
      agent: r.agent,
      instance: at.instance,
      ...(r.role ? { role: r.role } : {}),
      ...(r.persona ? { persona: r.persona } : {}),
      ...(r.terminal ? { terminal: r.terminal as SeatView["terminal"] } : {}),
      ...(r.permissionMode ? { permissionMode: r.permissionMode } : {}),
      ...presenceOf(live.get(r.seat)),
      ...(live.get(r.seat)?.wokenAt !== undefined ? { lastWakeAt: live.get(r.seat)!.wokenAt! } : {}),
      ...(r.pid !== undefined ? { pid: r.pid } : {}),
      ...(r.exit ? { exit: r.exit } : {}),
      ...(r.reason ? { reason: r.reason } : {}),
      ...(r.spec.carried ? { carried: r.spec.carried } : {}),
      ...(r.spawnedBy ? { spawnedBy: r.spawnedBy } : {}),
      ...(r.handedOverBy ? { handedOverBy: r.handedOverBy } : {}),
      requestedAt: r.requestedAt,
      since: r.since,
      restarts: live.get(r.seat)?.restartsAt.length ?? 0,
    }));
}

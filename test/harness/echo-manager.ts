// A ManagerService in this process on a static test mesh, whose seats run the built bundle's echo
// agent (real processes, no model): what the manager tests start, and how they read its seats, in
// one place.
import type { NatsConnection } from "@nats-io/transport-node";
import { controlCaller, jetStreamConnection, logger } from "../../broker/index.js";
import { ManagerService, type ManagerOptions } from "../../manager/index.js";
import { localPrincipal, MANAGER_COMMANDS, type SeatView } from "../../schemas/index.js";
import { until } from "../../testbed/until.js";
import { cotalBundle } from "./cli.js";
import type { TestMesh } from "./mesh.js";

const callManager = controlCaller(MANAGER_COMMANDS);

/** Start a manager `instance` on `mesh` (minting with the operator's credential), its state in `stateDir`. */
export function startEchoManager(
  mesh: TestMesh,
  conn: NatsConnection,
  o: { stateDir: string; instance: string; jsConn?: NatsConnection; over?: Partial<ManagerOptions> },
): Promise<ManagerService> {
  return ManagerService.start(conn, {
    space: mesh.space,
    server: mesh.server.url,
    stateDir: o.stateDir,
    instance: o.instance,
    mints: true,
    jsConnection: jetStreamConnection(o.jsConn ?? conn, mesh.cliCreds),
    agentCommand: (agent) => [process.execPath, cotalBundle, "agent", agent],
    seatEnv: (extra) => ({ PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", COTAL_LOG_LEVEL: "warn", ...extra }),
    log: logger("test-manager"),
    heartbeatMs: 500,
    ...o.over,
  });
}

/** Where a manager's seats are asked for: the operator's connection, the space, the manager's instance. */
export interface SeatsOf {
  nc: NatsConnection;
  space: string;
  instance: string;
}

/** The newest seat named `name` that manager lists in `ps --all`, asked as the operator. */
export async function seatOf(at: SeatsOf, name: string): Promise<SeatView | undefined> {
  const ps = await callManager(at.nc, at.space, "ps", localPrincipal("cotal_cli"), { all: true }, { target: at.instance });
  return ps.seats.filter((s) => s.name === name).sort((a, b) => b.requestedAt - a.requestedAt)[0];
}

/** Wait until that seat is as `ok` says (`what` names it); a timeout shows the seat as last listed. */
export async function untilSeat(at: SeatsOf, name: string, what: string, ok: (s: SeatView) => boolean, ms = 30_000): Promise<SeatView> {
  let last: SeatView | undefined;
  try {
    await until(async () => !!(last = await seatOf(at, name)) && ok(last), ms, `${name} on ${at.instance} to be ${what}`, 100);
  } catch (err) {
    throw new Error(`${(err as Error).message} (last: ${JSON.stringify(last)})`, { cause: err });
  }
  return last!;
}

/** Wait until that seat is in `state`. */
export function untilSeatState(at: SeatsOf, name: string, state: SeatView["state"], ms = 30_000): Promise<SeatView> {
  return untilSeat(at, name, state, (s) => s.state === state, ms);
}

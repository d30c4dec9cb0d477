// A ManagerService in this process on a static test mesh, whose seats run the built bundle's echo
// agent (real processes, no model): what the manager tests start, in one place.
import type { NatsConnection } from "@nats-io/transport-node";
import { jetStreamConnection, logger } from "../../broker/index.js";
import { ManagerService, type ManagerOptions } from "../../manager/index.js";
import { cotalBundle } from "./cli.js";
import type { TestMesh } from "./mesh.js";

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

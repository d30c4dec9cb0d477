// Adoption on a manager's start: a recorded running seat's process is taken over only when it
// proves to be this manager's own incarnation (launched from its state dir, the recorded
// incarnation's launch material), never by pid and start time alone; a recorded seat whose folder
// is gone is retired naming it, and the manager starts regardless. Two static meshes on one host
// (real nats-servers, real echo seat processes): mesh B's seat log holds mesh A's records of the
// same manager instance (what a restored backup, or a copied project folder, gives), so its pids
// name A's running seats.
import { cpSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { controlCaller, jetStreamConnection, logger, SERVICE_PRINCIPALS } from "../../broker/internal.js";
import { processStartTime } from "../../runtime/index.js";
import { ManagerService, SeatLog, type ManagerOptions } from "../../manager/internal.js";
import { localPrincipal, MANAGER_COMMANDS, messageText, type SeatView } from "../../schemas/index.js";
import { buildCli, cotalBundle } from "../harness/cli.js";
import { seatOf, untilSeatState } from "../harness/echo-manager.js";
import { TestMesh } from "../harness/mesh.js";
import { until } from "../../testbed/until.js";

const callManager = controlCaller(MANAGER_COMMANDS);
const operator = localPrincipal("cotal_cli");
const log = logger("test-adoption");

interface Side {
  mesh: TestMesh;
  nc: NatsConnection;
}
let a: Side;
let b: Side;
const dirs: string[] = [];
const managers: ManagerService[] = [];

beforeAll(async () => {
  await buildCli();
  for (const side of ["a", "b"] as const) {
    const mesh = await TestMesh.startStatic("adopt");
    const s = { mesh, nc: await mesh.rawConnection() };
    if (side === "a") a = s;
    else b = s;
  }
}, 120_000);
afterAll(async () => {
  for (const m of managers) await m.stopWithSeats(operator).catch(() => undefined);
  await a?.mesh.close();
  await b?.mesh.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), "cotal-adopt-"));
  dirs.push(d);
  return d;
}

function options(side: Side, instance: string, stateDir: string): ManagerOptions {
  return {
    space: side.mesh.space,
    server: side.mesh.server.url,
    stateDir,
    instance,
    mints: true,
    jsConnection: jetStreamConnection(side.nc, side.mesh.cliCreds),
    agentCommand: (agent) => [process.execPath, cotalBundle, "agent", agent],
    seatEnv: (extra) => ({ PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", COTAL_LOG_LEVEL: "warn", ...extra }),
    log,
    heartbeatMs: 500,
  };
}

async function manager(side: Side, instance: string, stateDir: string): Promise<ManagerService> {
  const m = await ManagerService.start(side.nc, options(side, instance, stateDir));
  managers.push(m);
  return m;
}

const seat = (side: Side, instance: string, name: string) => seatOf({ nc: side.nc, space: side.mesh.space, instance }, name);
const untilState = (side: Side, instance: string, name: string, state: SeatView["state"]) =>
  untilSeatState({ nc: side.nc, space: side.mesh.space, instance }, name, state);

/** Copy a seat's records from A's seat log into B's, up to (and including) the first record of type `upTo`. */
async function copyHistory(name: string, upTo: string): Promise<void> {
  const from = await SeatLog.open(jetStreamConnection(a.nc, a.mesh.cliCreds), a.mesh.space, log, SERVICE_PRINCIPALS.cli);
  const to = await SeatLog.open(jetStreamConnection(b.nc, b.mesh.cliCreds), b.mesh.space, log, SERVICE_PRINCIPALS.cli);
  const h = (await from.history(localPrincipal(name)))!;
  let seq = 0;
  for (const e of h.entries) {
    expect(e.writer).toBe(to.writerId);
    seq = await to.append(e.event, seq);
    if (e.event.type === upTo) break;
  }
}

function running(pid: number, startTime: string | undefined): boolean {
  return startTime !== undefined && processStartTime(pid) === startTime;
}

describe("adoption on a manager's start", () => {
  test("a record naming another mesh's running seat (same host, same manager instance) is never adopted; that seat runs on", async () => {
    const dirA = tempDir();
    const dirB = tempDir();
    await manager(a, "host", dirA);
    await callManager(a.nc, a.mesh.space, "spawn", operator, { agent: "echo", name: "e1" }, { target: "host" });
    await callManager(a.nc, a.mesh.space, "spawn", operator, { agent: "echo", name: "e2" }, { target: "host" });
    const e1 = await untilState(a, "host", "e1", "joined");
    const e2 = await untilState(a, "host", "e2", "joined");
    const start1 = processStartTime(e1.pid!);
    const start2 = processStartTime(e2.pid!);

    // B's seat log: e1 as it stands on A (joined; B has no folder for it, as after a restore),
    // e2 up to its launch, with a folder in B holding e2's very launch material (same incarnation):
    // only where the process was launched from tells the two meshes' seats apart.
    await copyHistory("e1", "joined");
    await copyHistory("e2", "launched");
    cpSync(join(dirA, "seats", "e2"), join(dirB, "seats", "e2"), { recursive: true });

    const mB = await manager(b, "host", dirB);
    const b1 = await untilState(b, "host", "e1", "retired");
    expect(b1.reason).toMatch(/^failed: its folder .*seats\/e1 is missing when the manager started/);
    expect(b1.exit?.output).toMatch(new RegExp(`pid ${e1.pid} still runs, but .*: it was not adopted`));
    const b2 = await untilState(b, "host", "e2", "retired");
    expect(b2.reason).toMatch(/^failed: .* before it joined/);
    expect(b2.exit?.output).toContain(`its launch material is ${join(dirA, "seats", "e2", "launch.json")}, not this manager's`);
    expect(existsSync(join(dirB, "seats", "e2"))).toBe(false);

    // A's seats were never touched: the same processes, still joined on A, still answering.
    await mB.stopWithSeats(operator);
    managers.splice(managers.indexOf(mB), 1);
    expect(running(e1.pid!, start1)).toBe(true);
    expect(running(e2.pid!, start2)).toBe(true);
    expect(await seat(a, "host", "e1")).toMatchObject({ state: "joined", pid: e1.pid, uid: e1.uid });
    const alice = await a.mesh.joined("alice");
    await alice.dm("local.e1", "still mine?");
    const got = await alice.deliveries[Symbol.asyncIterator]().next();
    expect(messageText(got.value!.message)).toBe("echo: still mine?");
  }, 180_000);

  test("a recorded running seat whose folder is gone is retired naming it; the manager starts and its other seat is adopted", async () => {
    const dir = tempDir();
    const first = await manager(a, "lost", dir);
    await callManager(a.nc, a.mesh.space, "spawn", operator, { agent: "echo", name: "gone" }, { target: "lost" });
    await callManager(a.nc, a.mesh.space, "spawn", operator, { agent: "echo", name: "kept" }, { target: "lost" });
    const gone = await untilState(a, "lost", "gone", "joined");
    const kept = await untilState(a, "lost", "kept", "joined");
    await first.stop(); // the seats keep running
    managers.splice(managers.indexOf(first), 1);
    const goneStart = processStartTime(gone.pid!);
    process.kill(gone.pid!, "SIGKILL");
    await until(() => !running(gone.pid!, goneStart), 10_000, "gone's process to end");
    rmSync(join(dir, "seats", "gone"), { recursive: true, force: true });

    await manager(a, "lost", dir); // before the fix: ENOENT on seats/gone/seat.log, no manager
    const retired = await untilState(a, "lost", "gone", "retired");
    expect(retired.reason).toBe(`failed: its folder ${join(dir, "seats", "gone")} is missing when the manager started, so it could not be started again`);
    expect(retired.exit?.output).toBe("the process was gone when the manager restarted");
    expect(await seat(a, "lost", "kept")).toMatchObject({ state: "joined", pid: kept.pid, uid: kept.uid, epoch: kept.epoch });
    // The name is free again.
    await callManager(a.nc, a.mesh.space, "spawn", operator, { agent: "echo", name: "gone" }, { target: "lost" });
    expect((await untilState(a, "lost", "gone", "joined")).uid).not.toBe(gone.uid);
  }, 180_000);
});

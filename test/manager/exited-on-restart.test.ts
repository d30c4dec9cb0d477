// A manager killed between a seat's `exited` record and the record that follows it (`restarted` or
// `retired`) leaves the seat at `exited` in the seat log. The next manager of that instance takes it
// up as if it had just seen the exit: restarted while the seat's restart policy allows (counting the
// restarts the log already shows in its window), else retired saying why; a seat the manager was
// stopping on purpose is retired, never restarted; a spawn it claimed but never started is retired as
// failed. Real nats-server, real echo seat processes; the killed manager's last record is written
// through the seat log's own append, as its writer.
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { controlCaller, jetStreamConnection, logger, SERVICE_PRINCIPALS } from "../../broker/internal.js";
import { processStartTime } from "../../runtime/index.js";
import { newLifecycleUid, SeatLog, type ManagerService } from "../../manager/internal.js";
import { localPrincipal, MANAGER_COMMANDS, messageText, type SeatEventInput, type SeatView } from "../../schemas/index.js";
import { buildCli } from "../harness/cli.js";
import { startEchoManager, untilSeat, untilSeatState } from "../harness/echo-manager.js";
import { TestMesh } from "../harness/mesh.js";
import { until } from "../../testbed/until.js";

const callManager = controlCaller(MANAGER_COMMANDS);
const operator = localPrincipal("cotal_cli");

let mesh: TestMesh;
let nc: NatsConnection;
let seatLog: SeatLog;
const dirs: string[] = [];
const managers: ManagerService[] = [];

beforeAll(async () => {
  await buildCli();
  mesh = await TestMesh.startStatic("exited");
  nc = await mesh.rawConnection();
  // The test mesh's managers write the log with the operator's credential: so does this.
  seatLog = await SeatLog.open(jetStreamConnection(nc, mesh.cliCreds), mesh.space, logger("test-exited"), SERVICE_PRINCIPALS.cli);
}, 120_000);
afterAll(async () => {
  for (const m of managers) await m.stopWithSeats(operator).catch(() => undefined);
  await mesh?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function manager(instance: string, stateDir: string): Promise<ManagerService> {
  const m = await startEchoManager(mesh, nc, { stateDir, instance });
  managers.push(m);
  return m;
}

/** Stop a manager as a kill would leave it: its seats keep running, it writes nothing more. */
async function kill(m: ManagerService): Promise<void> {
  await m.stop();
  managers.splice(managers.indexOf(m), 1);
}

const at = (instance: string) => ({ nc, space: mesh.space, instance });
const untilSeatIs = (instance: string, name: string, what: string, ok: (s: SeatView) => boolean) => untilSeat(at(instance), name, what, ok);
const untilState = (instance: string, name: string, state: SeatView["state"]) => untilSeatState(at(instance), name, state);

/** End a seat's process (SIGKILL) and wait until it is gone. */
async function killSeat(s: SeatView): Promise<void> {
  const start = processStartTime(s.pid!);
  process.kill(s.pid!, "SIGKILL");
  await until(() => processStartTime(s.pid!) !== start, 10_000, `${s.name}'s process ${s.pid} to end`);
}

/** The `exited` record its manager wrote for a seat just before it was killed (its writer's next append). */
async function exitedRecord(instance: string, s: SeatView, extra: Partial<Extract<SeatEventInput, { type: "exited" }>> = {}): Promise<void> {
  const h = await seatLog.history(localPrincipal(s.name));
  const event: SeatEventInput = {
    type: "exited",
    seat: s.seat,
    uid: s.uid,
    epoch: s.epoch,
    ts: Date.now(),
    manager: instance,
    code: null,
    signal: "SIGKILL",
    ...extra,
  };
  await seatLog.append(event, h?.lastSeqBy.get(seatLog.writerId) ?? 0);
}

function stateDir(): string {
  const d = mkdtempSync(join(tmpdir(), "cotal-exited-"));
  dirs.push(d);
  return d;
}

describe("a seat left at exited by a killed manager", () => {
  test("is restarted by the next manager when its restart policy allows, and answers mail again", async () => {
    const dir = stateDir();
    const first = await manager("ex1", dir);
    await callManager(nc, mesh.space, "spawn", operator, { agent: "echo", name: "lazarus", restarts: 3, windowMs: 60_000 }, { target: "ex1" });
    const before = await untilState("ex1", "lazarus", "joined");
    await kill(first);
    await killSeat(before);
    await exitedRecord("ex1", before, { output: "the seat's last words" });

    await manager("ex1", dir);
    const after = await untilSeatIs("ex1", "lazarus", "restarted and joined", (s) => s.state === "joined" && s.epoch === 1);
    expect(after).toMatchObject({ uid: before.uid, restarts: 1 });
    expect(after.pid).not.toBe(before.pid);
    const bob = await mesh.joined("bob");
    await bob.dm("local.lazarus", "back?");
    const got = await bob.deliveries[Symbol.asyncIterator]().next();
    expect(messageText(got.value!.message)).toBe("echo: back?");
  }, 120_000);

  test("counts the restarts the log shows in the window: one more exit than the seat allows retires it as a crash loop", async () => {
    const dir = stateDir();
    const first = await manager("ex2", dir);
    await callManager(nc, mesh.space, "spawn", operator, { agent: "echo", name: "flaky", restarts: 1, windowMs: 60_000 }, { target: "ex2" });
    const s0 = await untilState("ex2", "flaky", "joined");
    await killSeat(s0); // the manager sees this exit: its one restart
    const s1 = await untilSeatIs("ex2", "flaky", "restarted and joined", (s) => s.state === "joined" && s.epoch === 1);
    await kill(first);
    await killSeat(s1);
    await exitedRecord("ex2", s1);

    await manager("ex2", dir);
    const retired = await untilState("ex2", "flaky", "retired");
    expect(retired.reason).toBe("crash loop: exited 2 times within 60 s, last killed by SIGKILL");
    expect(retired.epoch).toBe(1);
    expect(existsSync(join(dir, "seats", "flaky"))).toBe(false);
    // Its name is free again.
    await callManager(nc, mesh.space, "spawn", operator, { agent: "echo", name: "flaky" }, { target: "ex2" });
    expect((await untilState("ex2", "flaky", "joined")).uid).not.toBe(s0.uid);
  }, 120_000);

  test("is retired, not restarted, when its manager was stopping it on purpose", async () => {
    const dir = stateDir();
    const first = await manager("ex3", dir);
    // A stop that completes says in its exit record why the seat goes: the retirement that follows.
    await callManager(nc, mesh.space, "spawn", operator, { agent: "echo", name: "done" }, { target: "ex3" });
    await untilState("ex3", "done", "joined");
    await callManager(nc, mesh.space, "stop", operator, { name: "done" }, { target: "ex3", timeoutMs: 30_000 });
    const records = (await seatLog.history(localPrincipal("done")))!.entries.map((e) => e.event);
    expect(records.filter((e) => e.type === "exited").at(-1)).toMatchObject({ retiring: "stopped by local.cotal_cli" });

    // One whose manager died between that record and its retirement.
    await callManager(nc, mesh.space, "spawn", operator, { agent: "echo", name: "leaving" }, { target: "ex3" });
    const leaving = await untilState("ex3", "leaving", "joined");
    await kill(first);
    await killSeat(leaving);
    await exitedRecord("ex3", leaving, { signal: "SIGTERM", retiring: "stopped by local.cotal_cli" });

    await manager("ex3", dir);
    const retired = await untilState("ex3", "leaving", "retired");
    expect(retired).toMatchObject({ reason: "stopped by local.cotal_cli", epoch: 0, pid: leaving.pid });
    expect(existsSync(join(dir, "seats", "leaving"))).toBe(false);
  }, 120_000);
});

describe("a seat left at requested by a killed manager", () => {
  test("a spawn its manager never started is retired as failed, and its name is free", async () => {
    const dir = stateDir();
    await kill(await manager("ex4", dir));
    // The manager claimed the name, then died before it prepared or launched the seat.
    const uid = newLifecycleUid();
    await seatLog.append({ type: "requested", seat: "local.unborn", uid, epoch: 0, ts: Date.now(), manager: "ex4", agent: "echo", channels: [] }, 0);

    await manager("ex4", dir);
    const retired = await untilState("ex4", "unborn", "retired");
    expect(retired.reason).toBe(`failed: its folder ${join(dir, "seats", "unborn")} is missing when the manager started, so it could not be started again`);
    await callManager(nc, mesh.space, "spawn", operator, { agent: "echo", name: "unborn" }, { target: "ex4" });
    expect((await untilState("ex4", "unborn", "joined")).uid).not.toBe(uid);
  }, 120_000);
});

// The manager on a static mesh with real minted credentials and real seat processes
// (the built `cotal agent echo`): spawn → joined, the seat answers a DM (a probed one naming its
// process), ps shows it, stop retires it and its credential is refused by the broker, the name is
// free again; a restarted
// manager re-adopts a running seat from the log; a seat that exits at once is `failed` with its
// output, one that never joins is `uncertain`, one that keeps dying is retired as a crash loop.
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, credsAuthenticator, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  ControlCallError,
  controlCaller,
  inboxPrefix,
  jetStreamConnection,
  PermissionDeniedError,
  permissionViolation,
  requestCredential,
  requestRevoke,
} from "../../broker/internal.js";
import { ECHO_PROBE_MEDIA_TYPE, EchoProbeReport, type ManagerService, type ManagerOptions } from "../../manager/index.js";
import { localPrincipal, MANAGER_COMMANDS, messageText, type SeatView } from "../../schemas/index.js";
import { buildCli } from "../harness/cli.js";
import { seatOf, startEchoManager, untilSeatState } from "../harness/echo-manager.js";
import { TestMesh } from "../harness/mesh.js";
import { until } from "../../testbed/until.js";

const callManager = controlCaller(MANAGER_COMMANDS);
const operator = localPrincipal("cotal_cli");

let mesh: TestMesh;
let nc: NatsConnection;
const dirs: string[] = [];
const managers: ManagerService[] = [];

beforeAll(async () => {
  await buildCli();
  mesh = await TestMesh.startStatic("mgr");
  nc = await mesh.rawConnection();
}, 120_000);
afterAll(async () => {
  for (const m of managers) await m.stopWithSeats(operator).catch(() => undefined);
  await mesh?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function manager(instance: string, over: Partial<ManagerOptions> = {}, stateDir?: string, conn: NatsConnection = nc): Promise<ManagerService> {
  const dir = stateDir ?? mkdtempSync(join(tmpdir(), "cotal-mgr-"));
  if (!stateDir) dirs.push(dir);
  const m = await startEchoManager(mesh, conn, { stateDir: dir, instance, jsConn: nc, over });
  managers.push(m);
  return m;
}

/** Whether a process with this pid exists. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

const seat = (instance: string, name: string) => seatOf({ nc, space: mesh.space, instance }, name);
const untilState = (instance: string, name: string, state: SeatView["state"], ms?: number) =>
  untilSeatState({ nc, space: mesh.space, instance }, name, state, ms);

describe("manager", () => {
  test("an echo seat: spawn → joined, answers a DM, ps shows it; stop retires it, its credential is refused, its name is free", async () => {
    const m1 = await manager("m1");
    const id = await callManager(nc, mesh.space, "spawn", operator, { agent: "echo", name: "echo1" }, { target: "m1" });
    expect(id).toMatchObject({ name: "echo1", seat: "local.echo1", instance: "m1" });
    const joined = await untilState("m1", "echo1", "joined");
    expect(joined.pid).toBeGreaterThan(0);

    const alice = await mesh.joined("alice");
    await alice.dm("local.echo1", "hello seat");
    const it = alice.deliveries[Symbol.asyncIterator]();
    const got = await it.next();
    expect(messageText(got.value!.message)).toBe("echo: hello seat");
    expect(got.value!.kind).toBe("dm");
    expect(got.value!.message.parts).toHaveLength(1);
    // A probed message (the fault suite's) is answered naming the process that was handed it.
    await alice.dm("local.echo1", [
      { kind: "text", text: "who?" },
      { kind: "data", mediaType: ECHO_PROBE_MEDIA_TYPE, data: {} },
    ]);
    const probed = (await it.next()).value!.message;
    expect(messageText(probed)).toBe("echo: who?");
    expect(EchoProbeReport.parse((probed.parts[1] as { data: unknown }).data)).toMatchObject({ pid: joined.pid, possibleRepeat: false });

    // Keep a copy of its credential to prove the broker refuses it after stop.
    const seatDir = join(dirs.at(-1)!, "seats", "echo1");
    const credsFile = readdirSync(seatDir).find((f) => f.endsWith(".creds"))!;
    const creds = readFileSync(join(seatDir, credsFile));

    const stopped = await callManager(nc, mesh.space, "stop", operator, { name: "echo1" }, { target: "m1", timeoutMs: 30_000 });
    expect(stopped).toMatchObject({ stopped: true });
    expect(stopped.revoked).toBeGreaterThanOrEqual(1);
    expect((await seat("m1", "echo1"))?.state).toBe("retired");
    expect(existsSync(seatDir)).toBe(false);
    await expect(connect({ servers: mesh.server.url, authenticator: credsAuthenticator(creds), maxReconnectAttempts: 0 })).rejects.toThrow(/Authorization/i);

    // The name is free again: a new incarnation gets it, not echo1_2.
    const again = await callManager(nc, mesh.space, "spawn", operator, { agent: "echo", name: "echo1" }, { target: "m1" });
    expect(again.name).toBe("echo1");
    expect(again.uid).not.toBe(id.uid);
    const first = await untilState("m1", "echo1", "joined");
    // A taken name is numbered.
    const second = await callManager(nc, mesh.space, "spawn", operator, { agent: "echo", name: "echo1" }, { target: "m1" });
    expect(second.name).toBe("echo1_2");
    const numbered = await untilState("m1", "echo1_2", "joined");
    // `cotal down`: the manager stops with its seats, asked on its own credential (as `cotal up`'s
    // manager is), which owns no seat as a spawner would: every seat process ends all the same.
    await m1.stopWithSeats(localPrincipal("m1"));
    for (const pid of [first.pid, numbered.pid]) expect(pid !== undefined && alive(pid), `seat pid ${pid} after stopWithSeats`).toBe(false);
  }, 120_000);

  test("the same request id returns the first result; --on routes to the named manager", async () => {
    await manager("m2");
    await manager("m3");
    const a = await callManager(nc, mesh.space, "spawn", operator, { agent: "echo", name: "twin", requestId: "req-1" }, { target: "m3" });
    const b = await callManager(nc, mesh.space, "spawn", operator, { agent: "echo", name: "twin", requestId: "req-1" }, { target: "m3" });
    expect(b).toMatchObject({ name: a.name, uid: a.uid, instance: "m3" });
    await untilState("m3", "twin", "joined");
    expect(await seat("m2", "twin")).toBeUndefined();
    const any = await callManager(nc, mesh.space, "spawn", operator, { agent: "echo", name: "anyone" });
    expect(["m2", "m3"]).toContain(any.instance);
  }, 120_000);

  test("an older CLI's spawn, naming the terminal host runtime, starts the seat in it; ps names it terminal", async () => {
    await manager("m9");
    // As an older CLI sends it (a variable, not a literal: the old key is no part of today's type).
    const older = { agent: "echo", name: "olden", runtime: "process" };
    await callManager(nc, mesh.space, "spawn", operator, older, { target: "m9" });
    expect(await untilState("m9", "olden", "joined")).toMatchObject({ terminal: "process" });
    const echoInTmux = { agent: "echo", name: "boxed", runtime: "tmux" };
    const refused = await callManager(nc, mesh.space, "spawn", operator, echoInTmux, { target: "m9" }).catch((e: unknown) => e);
    expect((refused as ControlCallError).code).toBe("terminal-unavailable");
    expect((refused as Error).message).toContain("The echo agent runs headless (terminal process), not tmux; nothing was started.");
    const both = { agent: "echo", name: "torn", terminal: "process" as const, runtime: "tmux" };
    const unclear = await callManager(nc, mesh.space, "spawn", operator, both, { target: "m9" }).catch((e: unknown) => e);
    expect((unclear as ControlCallError).code).toBe("invalid-args");
    expect((unclear as Error).message).toContain("the old name of `terminal`");
    expect(await seat("m9", "torn")).toBeUndefined();
  }, 120_000);

  test("a restarted manager rebuilds its table from the log and re-adopts the running seat", async () => {
    const dir = mkdtempSync(join(tmpdir(), "cotal-mgr-"));
    dirs.push(dir);
    const first = await manager("m4", {}, dir);
    await callManager(nc, mesh.space, "spawn", operator, { agent: "echo", name: "keeper" }, { target: "m4" });
    const before = await untilState("m4", "keeper", "joined");
    await first.stop(); // the seat keeps running
    managers.splice(managers.indexOf(first), 1);
    await manager("m4", {}, dir);
    const after = await untilState("m4", "keeper", "joined");
    expect(after).toMatchObject({ uid: before.uid, pid: before.pid, epoch: before.epoch });
    // And it still answers.
    const bob = await mesh.joined("bob");
    await bob.dm("local.keeper", "still there?");
    const got = await bob.deliveries[Symbol.asyncIterator]().next();
    expect(messageText(got.value!.message)).toBe("echo: still there?");
  }, 120_000);

  test("a seat that exits at once is failed with its output and retired; one that never joins is uncertain", async () => {
    await manager("m5", {
      agentCommand: () => [process.execPath, "-e", "console.error('no model configured'); process.exit(3)"],
    });
    await callManager(nc, mesh.space, "spawn", operator, { agent: "echo", name: "dud" }, { target: "m5" });
    const dud = await untilState("m5", "dud", "retired");
    expect(dud.reason).toMatch(/failed: exit code 3 before it joined/);
    expect(dud.exit?.output).toContain("no model configured");

    await manager("m6", { agentCommand: () => [process.execPath, "-e", "setTimeout(() => {}, 120000)"], readinessMs: 300 });
    await callManager(nc, mesh.space, "spawn", operator, { agent: "echo", name: "mute" }, { target: "m6" });
    const mute = await untilState("m6", "mute", "uncertain", 10_000);
    expect(mute.pid).toBeGreaterThan(0); // kept, not torn down
  }, 60_000);

  test("a seat that keeps dying after it joined is restarted, then retired as a crash loop", async () => {
    await manager("m7"); // the manager's default is 3 restarts a minute; this seat asks for 2
    await callManager(nc, mesh.space, "spawn", operator, { agent: "echo", name: "flaky", restarts: 2, windowMs: 60_000 }, { target: "m7" });
    for (let i = 0; i < 3; i++) {
      const s = await untilState("m7", "flaky", "joined");
      process.kill(s.pid!, "SIGKILL");
      await until(
        async () => {
          const now = await seat("m7", "flaky");
          return now?.pid !== s.pid || now?.state === "retired";
        },
        20_000,
        `flaky's process ${s.pid} to be replaced or retired`,
        100,
      );
    }
    const flaky = await untilState("m7", "flaky", "retired");
    expect(flaky.reason).toMatch(/crash loop: exited 3 times/);
  }, 120_000);

  test("a restarted seat that dies before it joins is started again after a pause, not retired as a failed spawn or a crash loop", async () => {
    await manager("m7b");
    // One restart a minute: a second crash after joining would retire it as a crash loop.
    await callManager(nc, mesh.space, "spawn", operator, { agent: "echo", name: "phoenix", restarts: 1, windowMs: 60_000 }, { target: "m7b" });
    const first = await untilState("m7b", "phoenix", "joined");
    process.kill(first.pid!, "SIGKILL");
    // Each restart is killed as soon as it runs, before it can join (as when the cluster elects
    // leaders and its presence write times out), three times over.
    const killed = [first.pid!];
    for (let i = 0; i < 3; i += 1) {
      let restartPid: number | undefined;
      await until(
        async () => {
          const now = await seat("m7b", "phoenix");
          restartPid = now?.pid !== undefined && !killed.includes(now.pid) && now.state !== "joined" ? now.pid : undefined;
          return restartPid !== undefined || now?.state === "retired";
        },
        30_000,
        `phoenix's restart ${i + 1} to be launched`,
        10,
      );
      expect(restartPid, "retired instead of started again").toBeDefined();
      process.kill(restartPid!, "SIGKILL");
      killed.push(restartPid!);
    }
    const back = await untilState("m7b", "phoenix", "joined");
    expect(killed).not.toContain(back.pid);
    expect(back.epoch).toBe(4);
  }, 120_000);

  test("a refused spawn says nothing was started", async () => {
    await manager("m8", { maxSeats: 1 });
    await callManager(nc, mesh.space, "spawn", operator, { agent: "echo", name: "only" }, { target: "m8" });
    const err = await callManager(nc, mesh.space, "spawn", operator, { agent: "echo", name: "more" }, { target: "m8" }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ControlCallError);
    expect((err as ControlCallError).code).toBe("seat-limit");
    expect((err as ControlCallError).outcome).toBe("not-executed");
    expect((err as Error).message).toMatch(/nothing was started/);
    // despawn is stop by its other name: the seat is retired and the slot is free again.
    expect(await callManager(nc, mesh.space, "despawn", operator, { name: "only" }, { target: "m8", timeoutMs: 30_000 })).toMatchObject({ stopped: true });
    await callManager(nc, mesh.space, "spawn", operator, { agent: "echo", name: "more" }, { target: "m8" });
  });

  test("a manager on another host runs on a minted manager credential: it mints and revokes its seats' agent credentials, nothing else", async () => {
    const creds = await mesh.mint({ name: "remote_mgr", profile: "manager" });
    const me = localPrincipal("remote_mgr");
    const remoteNc = await mesh.connection(creds, inboxPrefix(me));
    // Its instance is its credential's name: the broker lets it serve, heartbeat and write the seat log only as that.
    await manager("remote_mgr", { jsConnection: jetStreamConnection(remoteNc, creds), caller: me }, undefined, remoteNc);
    const id = await callManager(nc, mesh.space, "spawn", operator, { agent: "echo", name: "faraway" }, { target: "remote_mgr" });
    expect(id.instance).toBe("remote_mgr");
    await untilState("remote_mgr", "faraway", "joined");
    const stopped = await callManager(nc, mesh.space, "stop", operator, { name: "faraway" }, { target: "remote_mgr", timeoutMs: 30_000 });
    expect(stopped.revoked).toBeGreaterThanOrEqual(1);
    // The mesh service lets a manager's credential mint only agents.
    const admin = await requestCredential(remoteNc, mesh.space, { name: "sneaky", profile: "admin" }, me).catch((e: unknown) => e);
    expect(admin).toMatchObject({ code: "not-allowed" });
    const operatorRevoke = await requestRevoke(remoteNc, mesh.space, "cotal_cli", me).catch((e: unknown) => e);
    expect(operatorRevoke).toMatchObject({ code: "not-allowed" });
    // Nor another's agent name: minting it would let the manager act as that agent, revoking it would cut it off.
    await mesh.mint({ name: "someone", profile: "agent", allowSubscribe: ["general"], allowPublish: ["general"] });
    const takeOver = await requestCredential(remoteNc, mesh.space, { name: "someone", profile: "agent", allowPublish: ["general"] }, me).catch(
      (e: unknown) => e,
    );
    expect(takeOver).toMatchObject({ code: "not-allowed" });
    const cutOff = await requestRevoke(remoteNc, mesh.space, "someone", me).catch((e: unknown) => e);
    expect(cutOff).toMatchObject({ code: "not-allowed" });
    // Nor one of Cotal's own service names (an agent called cotal_cli would be taken for the operator).
    const operatorName = await requestCredential(remoteNc, mesh.space, { name: "cotal_cli", profile: "agent" }, me).catch((e: unknown) => e);
    expect(operatorName).toMatchObject({ code: expect.stringMatching(/not-allowed|mint-refused/) });
    // A name it squats before the operator makes it a manager gains nothing: the profile change revokes the squatter's credential.
    const squatCreds = join(dirs.at(-1)!, "squat.creds");
    const squat = await requestCredential(remoteNc, mesh.space, { name: "hostc", profile: "agent" }, me);
    writeFileSync(squatCreds, squat.creds, { mode: 0o600 });
    await mesh.mint({ name: "hostc", profile: "manager" });
    await expect(connect({ servers: mesh.server.url, authenticator: credsAuthenticator(squat.creds), maxReconnectAttempts: 0 })).rejects.toThrow(
      /Authorization/i,
    );
    // Its own seat's name again is fine (a new incarnation after a retire).
    expect((await requestCredential(remoteNc, mesh.space, { name: "faraway", profile: "agent" }, me)).reply.principal).toBe("local.faraway");
  });

  test("an agent's credential can neither call a manager nor write the seat log (the broker refuses)", async () => {
    const creds = await mesh.mint({ name: "mallory", profile: "agent", allowSubscribe: ["general"], allowPublish: ["general"] });
    const agentNc = await mesh.connection(creds);
    const mallory = localPrincipal("mallory");
    await expect(callManager(agentNc, mesh.space, "spawn", mallory, { agent: "echo", name: "evil" })).rejects.toBeInstanceOf(PermissionDeniedError);
    await expect(callManager(agentNc, mesh.space, "ps", mallory, { all: true })).rejects.toBeInstanceOf(PermissionDeniedError);
    const forged = await jetStreamConnection(agentNc, creds)
      .request(`cotal.${mesh.space}.seat.local.mallory`, new TextEncoder().encode("{}"), { timeout: 2_000 })
      .catch((e: unknown) => e);
    expect(permissionViolation(forged)).toBeDefined();
  });
});

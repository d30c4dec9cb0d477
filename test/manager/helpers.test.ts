// Agents that staff their team: a seat minted with `--allow-spawn helper` starts
// and retires helpers through the MCP tools (an in-process connector on a static mesh, a real
// manager, real echo helper processes). One without the right is refused by the broker; a persona
// it may not spawn, a helper wider than it, its seat limit and the budget gate are refused with the
// reason; retiring a spawner that is a seat retires its helpers, except one it handed over.
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { controlCaller, jetStreamConnection, logger, PermissionDeniedError, requestControl } from "../../broker/internal.js";
import { personaDigests } from "../../runtime/index.js";
import { ManagerService, type BudgetCaps } from "../../manager/index.js";
import { localPrincipal, MANAGER_COMMANDS, type SeatView } from "../../schemas/index.js";
import { buildCli, cotalBundle } from "../harness/cli.js";
import { startEchoManager } from "../harness/echo-manager.js";
import { TestMesh } from "../harness/mesh.js";
import { until } from "../../testbed/until.js";
import { call, mcpClient, startConnector } from "../connector/helpers.js";

const callManager = controlCaller(MANAGER_COMMANDS);
const operator = localPrincipal("cotal_cli");
const HELPER_TOOLS = ["cotal_despawn", "cotal_handover", "cotal_personas", "cotal_spawn"];

let mesh: TestMesh;
let nc: NatsConnection;
let m1: ManagerService | undefined;
let folder: string;
let stateDir: string;
/** The manager's budget caps: the test changes them while it runs (a live view, as budget.json's). */
const caps: BudgetCaps = {};
const cleanups: Array<() => Promise<unknown>> = [];

/** An agent file in the manager's folder. */
function agentFile(persona: string, lines: string[]): void {
  writeFileSync(join(folder, ".cotal", "agents", `${persona}.md`), ["---", `name: ${persona}`, ...lines, "---", `You are ${persona}.`, ""].join("\n"));
}

beforeAll(async () => {
  await buildCli();
  mesh = await TestMesh.startStatic("helpers");
  nc = await mesh.rawConnection();
  folder = mkdtempSync(join(tmpdir(), "cotal-helpers-folder-"));
  stateDir = mkdtempSync(join(tmpdir(), "cotal-helpers-mgr-"));
  mkdirSync(join(folder, ".cotal", "agents"), { recursive: true });
  agentFile("helper", ["subscribe: [general]", "description: does what it is told"]);
  // Reads a channel its spawner may not: never spawned by sam.
  agentFile("wide", ["subscribe: [general, secret]"]);
  m1 = await startEchoManager(mesh, nc, { stateDir, instance: "m1", over: { folder, budget: caps } });
}, 180_000);

afterAll(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
  await m1?.stopWithSeats(operator).catch(() => undefined);
  await mesh?.close();
  for (const d of [folder, stateDir]) if (d) rmSync(d, { recursive: true, force: true });
});

async function seat(name: string): Promise<SeatView | undefined> {
  const ps = await callManager(nc, mesh.space, "ps", operator, { all: true }, { target: "m1" });
  return ps.seats.filter((s) => s.name === name).sort((a, b) => b.requestedAt - a.requestedAt)[0];
}

async function untilState(name: string, state: SeatView["state"]): Promise<SeatView> {
  let last: SeatView | undefined;
  await until(async () => (last = await seat(name))?.state === state, 30_000, `${name} to be ${state} (last: ${JSON.stringify(last)})`, 100);
  return last!;
}

/** An in-process connector for `name` on its credential, and an MCP client on it. */
async function seatWithTools(name: string, creds: string) {
  const conn = await startConnector(mesh, name, { launch: { creds, channels: ["general"] } });
  cleanups.push(conn.close);
  const mcp = await mcpClient(conn.connector);
  cleanups.push(mcp.close);
  const tools = (await mcp.client.listTools()).tools.map((t) => t.name);
  return { client: mcp.client, tools };
}

describe("helpers: agents that staff their team", () => {
  test("a seat minted with --allow-spawn helper spawns and despawns a helper through cotal_spawn and cotal_despawn, and hands one over", async () => {
    const creds = await mesh.mint({
      name: "sam",
      profile: "agent",
      allowSubscribe: ["general"],
      allowPublish: ["general"],
      allowSpawn: ["helper", "wide"],
      personaDigests: personaDigests(folder, ["helper", "wide"]),
      spawnLimit: 2,
    });
    const sam = await seatWithTools("sam", creds);
    expect(sam.tools).toEqual(expect.arrayContaining(HELPER_TOOLS));

    const personas = await call(sam.client, "cotal_personas");
    expect(personas.isError).toBe(false);
    expect(personas.text).toContain("- helper (seat name helper; runtime claude; in #general): does what it is told");
    expect(personas.text).toMatch(/- wide .*cannot be spawned: a helper of it would be wider than you: it would read secret/);
    expect(personas.text).toContain("You hold 0 helpers of at most 2.");

    const spawned = await call(sam.client, "cotal_spawn", { persona: "helper", runtime: "echo" });
    expect(spawned.isError, spawned.text).toBe(false);
    expect(spawned.text).toContain("Spawned helper (persona helper) on manager m1");
    const joined = await untilState("helper", "joined");
    expect(joined).toMatchObject({ agent: "echo", spawnedBy: "local.sam" });
    expect((await call(sam.client, "cotal_personas")).text).toContain("You hold 1 helper of at most 2.");

    const despawned = await call(sam.client, "cotal_despawn", { helper: "helper" });
    expect(despawned.isError, despawned.text).toBe(false);
    expect(despawned.text).toBe("helper: stopped, retired, 1 credential revoked; its name is free.");
    expect((await seat("helper"))?.state).toBe("retired");

    // Handed over to another spawner: it answers to tess now, and sam may no longer retire it.
    const tessCreds = await mesh.mint({
      name: "tess",
      profile: "agent",
      allowSubscribe: ["general"],
      allowPublish: ["general"],
      allowSpawn: ["helper"],
      personaDigests: personaDigests(folder, ["helper"]),
    });
    expect((await call(sam.client, "cotal_spawn", { persona: "helper", runtime: "echo", helper: "aide" })).isError).toBe(false);
    await untilState("aide", "joined");
    const handed = await call(sam.client, "cotal_handover", { helper: "aide", to: "local.tess" });
    expect(handed.text).toBe("aide answers to local.tess now: it no longer retires with you, and you can no longer retire it.");
    expect(await seat("aide")).toMatchObject({ state: "joined", spawnedBy: "local.tess", handedOverBy: "local.sam" });
    const notSams = await call(sam.client, "cotal_despawn", { helper: "aide" });
    expect(notSams).toMatchObject({ isError: true });
    expect(notSams.text).toContain("aide does not answer to local.sam");
    const tess = await mesh.connection(tessCreds, "_INBOX.local.tess");
    cleanups.push(() => tess.close());
    expect(await callManager(tess, mesh.space, "despawn", localPrincipal("tess"), { name: "aide" }, { target: "m1", timeoutMs: 30_000 })).toMatchObject({
      stopped: true,
    });
  }, 180_000);

  test("refused with the reason: a persona not granted, a helper wider than its spawner, the seat limit, the budget gate, operator-only arguments", async () => {
    const creds = await mesh.mint({
      name: "rita",
      profile: "agent",
      allowSubscribe: ["general"],
      allowPublish: ["general"],
      allowSpawn: ["helper", "wide"],
      personaDigests: personaDigests(folder, ["helper", "wide"]),
      spawnLimit: 2,
    });
    const rita = await seatWithTools("rita", creds);
    const refused = async (args: Record<string, unknown>) => {
      const r = await call(rita.client, "cotal_spawn", args);
      expect(r.isError, r.text).toBe(true);
      return r.text;
    };
    expect(await refused({ persona: "coder" })).toContain("local.rita may spawn helpers of helper, wide, not coder. Nothing was started.");
    expect(await refused({ persona: "wide", runtime: "echo" })).toContain(
      "A helper of wide would be wider than local.rita: it would read secret, which its spawner may not; it would post on secret, where its spawner may not. Nothing was started.",
    );
    expect(await refused({ persona: "helper", runtime: "echo", channels: ["ops"] })).toContain("it would read ops, which its spawner may not");
    expect(await refused({ persona: "helper", runtime: "echo", role: "reviewer" })).toContain(
      "it would take role reviewer's anycasts, a role its spawner does not hold",
    );
    expect(await refused({ persona: "helper", runtime: "codex" })).toContain("a helper of it may run on claude or echo, not codex");
    // Only the operator chooses where a seat works (the connector has no such argument; a raw request tries).
    const ritaNc = await mesh.connection(creds, "_INBOX.local.rita");
    cleanups.push(() => ritaNc.close());
    await expect(
      callManager(ritaNc, mesh.space, "spawn", localPrincipal("rita"), { persona: "helper", agent: "echo", cwd: "/" }, { target: "m1" }),
    ).rejects.toMatchObject({ code: "spawn-not-allowed", message: expect.stringContaining("Only the operator passes cwd") });

    // The limit: two helpers, then a third is refused naming them.
    for (const helper of ["r1", "r2"]) expect((await call(rita.client, "cotal_spawn", { persona: "helper", runtime: "echo", helper })).isError).toBe(false);
    expect(await refused({ persona: "helper", runtime: "echo", helper: "r3" })).toContain(
      "local.rita already holds 2 helpers (r1, r2), its limit of 2; nothing was started.",
    );
    for (const helper of ["r1", "r2"]) expect((await call(rita.client, "cotal_despawn", { helper })).isError).toBe(false);

    // The budget gate: a daily cap already reached refuses even a helper that runs no model.
    caps.dailyUsd = 0;
    try {
      expect(await refused({ persona: "helper", runtime: "echo" })).toMatch(/Refused by the daily cap \(UTC [0-9-]+\): \$0\.0000 spent \+ \$0\.0000 estimated/);
    } finally {
      delete caps.dailyUsd;
    }
    // Nothing of these started.
    expect((await seat("r3"))?.state).toBeUndefined();
    expect((await seat("wide"))?.state).toBeUndefined();
  }, 180_000);

  test("an agent without the right is refused by the broker, and is offered no helper tool", async () => {
    const creds = await mesh.mint({ name: "ann", profile: "agent", allowSubscribe: ["general"], allowPublish: ["general"] });
    const ann = await seatWithTools("ann", creds);
    for (const t of HELPER_TOOLS) expect(ann.tools).not.toContain(t);
    // A raw NATS client with its credential, on the operator-mode server: the permission violation names the subject.
    const raw = await mesh.connection(creds, "_INBOX.local.ann");
    cleanups.push(() => raw.close());
    const me = localPrincipal("ann");
    for (const [target, command] of [
      ["one", "spawn"],
      ["m1", "spawn"],
      ["m1", "despawn"],
      ["m1", "personas"],
      ["m1", "handover"],
    ] as const) {
      const err = await requestControl(raw, mesh.space, "manager", command, me, { persona: "helper", agent: "echo", name: "x" }, { target }).catch(
        (e: unknown) => e,
      );
      expect(err, `${command}@${target}`).toBeInstanceOf(PermissionDeniedError);
      expect((err as Error).message).toContain(`cotal.${mesh.space}.ep.manager.${target}.${command}.local.ann`);
    }
    expect(await seat("x")).toBeUndefined();
  }, 120_000);

  test("retiring a spawner that is a seat retires its helpers, except the one it handed over", async () => {
    // The operator's spawn gives a seat the right (cotal spawn --allow-spawn helper); it works in the folder with the agent files.
    const boss = await callManager(
      nc,
      mesh.space,
      "spawn",
      operator,
      { agent: "echo", name: "boss", channels: ["general"], cwd: folder, allowSpawn: ["helper"] },
      { target: "m1", timeoutMs: 30_000 },
    );
    await untilState("boss", "joined");
    // Act as the seat with its own credential (an echo seat has no MCP tools; its manager-minted credential carries the right).
    const credsFile = join(stateDir, "seats", "boss", `${boss.uid}.creds`);
    expect(readdirSync(join(stateDir, "seats", "boss"))).toContain(`${boss.uid}.creds`);
    const bossNc = await mesh.connection(credsFile, "_INBOX.local.boss");
    cleanups.push(() => bossNc.close().catch(() => undefined));
    const me = localPrincipal("boss");
    for (const name of ["h1", "h2"])
      await callManager(bossNc, mesh.space, "spawn", me, { persona: "helper", agent: "echo", name }, { target: "m1", timeoutMs: 30_000 });
    for (const name of ["h1", "h2"]) expect(await untilState(name, "joined")).toMatchObject({ spawnedBy: "local.boss" });
    // h2 is handed over to the operator: it no longer answers to boss.
    expect(await callManager(bossNc, mesh.space, "handover", me, { name: "h2" }, { target: "m1" })).toMatchObject({ from: "local.boss", seat: "local.h2" });
    const h2 = await seat("h2");
    expect(h2?.spawnedBy).toBeUndefined();
    expect(h2?.handedOverBy).toBe("local.boss");

    await callManager(nc, mesh.space, "stop", operator, { name: "boss" }, { target: "m1", timeoutMs: 60_000 });
    expect((await seat("boss"))?.state).toBe("retired");
    expect(await seat("h1")).toMatchObject({ state: "retired", reason: "retired with its spawner local.boss" });
    expect((await seat("h2"))?.state).toBe("joined");
    await callManager(nc, mesh.space, "stop", operator, { name: "h2" }, { target: "m1", timeoutMs: 30_000 });
  }, 180_000);

  test("a manager that restarts to find a spawner gone retires its helper, whose process it adopted first", async () => {
    const dir = mkdtempSync(join(tmpdir(), "cotal-helpers-m2-"));
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
    const start = () =>
      ManagerService.start(nc, {
        space: mesh.space,
        server: mesh.server.url,
        stateDir: dir,
        folder,
        instance: "m2",
        mints: true,
        jsConnection: jetStreamConnection(nc, mesh.cliCreds),
        agentCommand: (agent) => [process.execPath, cotalBundle, "agent", agent],
        seatEnv: (extra) => ({ PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", COTAL_LOG_LEVEL: "warn", ...extra }),
        log: logger("test-manager-m2"),
        heartbeatMs: 500,
      });
    let m2 = await start();
    cleanups.push(() => m2.stopWithSeats(operator));
    const at = async (name: string) =>
      (await callManager(nc, mesh.space, "ps", operator, { all: true }, { target: "m2" })).seats
        .filter((v) => v.name === name)
        .sort((a, b) => b.requestedAt - a.requestedAt)[0];
    const chief = await callManager(
      nc,
      mesh.space,
      "spawn",
      operator,
      { agent: "echo", name: "chief", channels: ["general"], cwd: folder, allowSpawn: ["helper"] },
      { target: "m2", timeoutMs: 30_000 },
    );
    await until(async () => (await at("chief"))?.state === "joined", 30_000, "chief to join");
    const chiefNc = await mesh.connection(join(dir, "seats", "chief", `${chief.uid}.creds`), "_INBOX.local.chief");
    cleanups.push(() => chiefNc.close().catch(() => undefined));
    await callManager(
      chiefNc,
      mesh.space,
      "spawn",
      localPrincipal("chief"),
      { persona: "helper", agent: "echo", name: "aid" },
      { target: "m2", timeoutMs: 30_000 },
    );
    await until(async () => (await at("aid"))?.state === "joined", 30_000, "aid to join");
    const aidPid = (await at("aid"))!.pid!;
    const chiefPid = (await at("chief"))!.pid!;

    // The manager stops (its seats run on); the spawner dies and its folder goes while it is away.
    await m2.stop();
    process.kill(-chiefPid, "SIGKILL");
    await until(async () => !alive(chiefPid), 10_000, "chief's process to end");
    rmSync(join(dir, "seats", "chief"), { recursive: true, force: true });
    m2 = await start();
    expect((await at("chief"))?.state).toBe("retired");
    expect(await at("aid")).toMatchObject({ state: "retired", reason: "retired with its spawner local.chief" });
    // Adopted before it was retired, so the manager stopped its process itself (and recorded how it ended).
    expect((await at("aid"))?.exit).toBeDefined();
    await until(async () => !alive(aidPid), 10_000, "aid's process to end");
  }, 180_000);
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

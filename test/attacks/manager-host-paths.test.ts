// The hole this closes: what observers read of a manager named its host's paths. A `ps` reply carried
// each terminal seat's `attach` command (the manager's tmux socket, in its state folder), and a
// failed seat's last output or reason as the host printed it; the manager's heartbeat carried its
// Claude login file. Observers may call `ps` on any manager and read every heartbeat. Now `ps` has
// no attach (`cotal attach` builds it on the host: attach.ts), a non-operator's `ps` names host paths
// by what they are (host-paths.ts, as a run's error), and a heartbeat carries only a verdict on its
// auth; the operator's `ps` and `status` keep the full text. Black-box: a real operator-mode server,
// a manager with a terminal seat (a stand-in claude in its own tmux) and a seat that failed naming its
// folder, and a minted observer credential on a raw NATS client.
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { randomUUID } from "node:crypto";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { controlCaller, jetStreamConnection, JS_OPTIONS, logger } from "../../broker/internal.js";
import { ManagerService } from "../../manager/internal.js";
import { localPrincipal, MANAGER_COMMANDS, names, type SeatView } from "../../schemas/index.js";
import { TestMesh } from "../harness/mesh.js";
import { claudeHost } from "../harness/claude-manager.js";
import { until } from "../../testbed/until.js";

const callManager = controlCaller(MANAGER_COMMANDS);
const operator = localPrincipal("cotal_cli");
const root = mkdtempSync(join(tmpdir(), "cotal-hostpaths-"));
const stateDir = join(root, "state");
const home = join(root, "home");
const login = join(home, ".claude", ".credentials.json");

let mesh: TestMesh;
let nc: NatsConnection;
let observer: NatsConnection;
let observerCreds: string;
let m: ManagerService | undefined;

beforeAll(async () => {
  mesh = await TestMesh.startStatic("hostpaths");
  nc = await mesh.rawConnection();
  mkdirSync(join(home, ".claude"), { recursive: true });
  writeFileSync(login, "{}\n", { mode: 0o600 }); // a subscription login: ready, and its file is a host path
  const claude = join(root, "claude");
  writeFileSync(claude, "#!/bin/sh\nsleep 300\n"); // a terminal seat that never reaches its input screen
  chmodSync(claude, 0o755);
  m = await ManagerService.start(nc, {
    space: mesh.space,
    server: mesh.server.url,
    stateDir,
    instance: "paths",
    mints: true,
    jsConnection: jetStreamConnection(nc, mesh.cliCreds),
    // An echo seat that fails at once, printing the folder it ran in.
    agentCommand: () => [process.execPath, "-e", "console.error(`cannot start in ${process.cwd()}`); process.exit(3)"],
    seatEnv: (extra) => ({ PATH: process.env.PATH ?? "", HOME: home, COTAL_LOG_LEVEL: "warn", ...extra }),
    runtimes: claudeHost({
      executable: claude,
      connectorEntry: join(root, "connector.mjs"),
      pluginDir: root,
      parentEnv: { PATH: process.env.PATH ?? "", HOME: home },
      seedConfig: false,
      screenTimeoutMs: 240_000,
    }),
    log: logger("test-manager"),
    heartbeatMs: 500,
  });
  observerCreds = await mesh.mint({ name: "olga", profile: "observer" });
  observer = await mesh.connection(observerCreds, "_INBOX.local.olga");

  await callManager(nc, mesh.space, "spawn", operator, { agent: "claude", name: "term" }, { target: "paths", timeoutMs: 30_000 });
  await callManager(nc, mesh.space, "spawn", operator, { agent: "echo", name: "dud" }, { target: "paths", timeoutMs: 30_000 });
  await until(
    async () => {
      const seats = await operatorPs();
      return seats.find((s) => s.name === "term")?.state === "launched" && seats.find((s) => s.name === "dud")?.state === "retired";
    },
    30_000,
    "the terminal seat to run and the failing seat to be retired",
    100,
  );
}, 120_000);

afterAll(async () => {
  await m?.stopWithSeats(operator).catch(() => undefined);
  await mesh?.close();
  rmSync(root, { recursive: true, force: true });
});

async function operatorPs(): Promise<SeatView[]> {
  return (await callManager(nc, mesh.space, "ps", operator, { all: true }, { target: "paths" })).seats;
}

/** The observer's `ps` reply as the wire carries it. */
async function observerPsRaw(): Promise<string> {
  const body = JSON.stringify({ id: randomUUID(), deadline: Date.now() + 5_000, caller: "local.olga", args: { all: true } });
  const reply = await observer.request(`cotal.${mesh.space}.ep.manager.paths.ps.local.olga`, body, { timeout: 5_000 });
  return new TextDecoder().decode(reply.data);
}

describe("what an observer reads of a manager names none of its host's paths", () => {
  test("ps: no terminal command; a failed seat's output names its folder by what it is; the operator sees it whole", async () => {
    const raw = await observerPsRaw();
    const reply = JSON.parse(raw) as { ok: boolean; data: { seats: SeatView[] } };
    expect(reply.ok, raw).toBe(true);
    expect(reply.data.seats.map((s) => s.name).sort()).toEqual(["dud", "term"]);
    expect(raw).not.toContain(root);
    expect(raw).not.toContain("attach");
    const dud = reply.data.seats.find((s) => s.name === "dud")!;
    expect(dud.exit?.output).toContain("cannot start in <manager state>/seats/dud");

    const mine = await operatorPs();
    expect(mine.find((s) => s.name === "dud")?.exit?.output).toContain(`cannot start in ${join(stateDir, "seats", "dud")}`);
    expect(JSON.stringify(mine)).not.toContain("attach");
  });

  test("the heartbeat: a verdict on the Claude auth, no login file; the operator's status names it", async () => {
    const js = await jetstreamManager(jetStreamConnection(observer, observerCreds), JS_OPTIONS);
    const bucket = names.managersBucket(mesh.space);
    const beat = await js.streams.getMessage(`KV_${bucket}`, { last_by_subj: `$KV.${bucket}.paths` });
    const raw = new TextDecoder().decode(beat!.data);
    expect(raw).not.toContain(root);
    expect(JSON.parse(raw)).toMatchObject({
      instance: "paths",
      runtimes: [{ name: "claude", ready: true, auth: { mode: "subscription", chosen: "auto", vars: [] } }],
    });
    expect(JSON.parse(raw).runtimes[0].auth).not.toHaveProperty("login");

    const status = await callManager(nc, mesh.space, "status", operator, {}, { target: "paths" });
    expect(status.runtimes?.find((r) => r.name === "claude")).toMatchObject({ ready: true, auth: { mode: "subscription", login } });
  });
});

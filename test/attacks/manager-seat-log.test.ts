// The hole this closes: a manager credential forged the seat log and the budgets. It appended
// `retired` to another manager's live seat (whose `stop` then killed the process but failed to
// retire it, leaving its credential valid), and wrote run records for runs it never ran: cost 0
// dated tomorrow dragged the median to 0 so a fan-out passed a daily cap it should fail; cost 1e12
// blocked every run for the day. Black-box: a real operator-mode server, minted manager credentials,
// real managers (echo seats, a stand-in `claude` that reports $2 a run), and the attacker's raw
// client trying every subject it could write the records on.
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, credsAuthenticator, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { controlCaller, inboxPrefix, jetStreamConnection, logger } from "../../broker/internal.js";
import { ManagerService, newLifecycleUid, type ManagerOptions } from "../../manager/internal.js";
import { localPrincipal, MANAGER_COMMANDS, type SeatView } from "../../schemas/index.js";
import { buildCli, cotalBundle } from "../harness/cli.js";
import { TestMesh } from "../harness/mesh.js";
import { claudeHost } from "../harness/claude-manager.js";
import { until } from "../../testbed/until.js";
import { storeOutcome } from "./store-outcome.js";

const callManager = controlCaller(MANAGER_COMMANDS);
const operator = localPrincipal("cotal_cli");
const victim = localPrincipal("victim");
const DAY_MS = 86_400_000;

let mesh: TestMesh;
let nc: NatsConnection;
/** The attacker's raw client (a minted `manager` credential), JetStream requests as the CLI sends them. */
let mallory: NatsConnection;
const dirs: string[] = [];
const managers: ManagerService[] = [];
let victimDir: string;
let victimNc: NatsConnection;
let victimCreds: string;
/** Where the operator's runs work: an agent file `worker`. */
let project: string;

function tempDir(prefix: string): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(d);
  return d;
}

async function startVictim(): Promise<ManagerService> {
  // A stand-in for the claude CLI: reads its prompt, reports a run that cost $2.
  const fakeClaude = join(victimDir, "claude");
  writeFileSync(
    fakeClaude,
    `#!/bin/sh\ncat >/dev/null\necho '{"type":"result","subtype":"success","is_error":false,"result":"done","total_cost_usd":2,"session_id":"s"}'\n`,
  );
  chmodSync(fakeClaude, 0o755);
  const o: ManagerOptions = {
    space: mesh.space,
    server: mesh.server.url,
    stateDir: victimDir,
    instance: "victim",
    mints: true,
    caller: victim,
    jsConnection: jetStreamConnection(victimNc, victimCreds),
    agentCommand: (agent) => [process.execPath, cotalBundle, "agent", agent],
    seatEnv: (extra) => ({ PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", COTAL_LOG_LEVEL: "warn", ...extra }),
    runtimes: claudeHost({
      executable: fakeClaude,
      connectorEntry: cotalBundle,
      pluginDir: victimDir,
      parentEnv: { PATH: process.env.PATH ?? "", HOME: victimDir, ANTHROPIC_API_KEY: "sk-ant-test-dummy" },
      seedConfig: false,
    }),
    budget: { dailyUsd: 10 },
    log: logger("victim-manager"),
    heartbeatMs: 500,
  };
  const m = await ManagerService.start(victimNc, o);
  managers.push(m);
  return m;
}

beforeAll(async () => {
  await buildCli();
  mesh = await TestMesh.startStatic("mgrlog");
  nc = await mesh.rawConnection();
  victimDir = tempDir("cotal-victim-");
  victimCreds = await mesh.mint({ name: "victim", profile: "manager" });
  victimNc = await mesh.connection(victimCreds, inboxPrefix(victim));
  await startVictim();
  const malloryCreds = await mesh.mint({ name: "mallory", profile: "manager" });
  mallory = jetStreamConnection(await mesh.connection(malloryCreds, inboxPrefix(localPrincipal("mallory"))), malloryCreds);
  project = tempDir("cotal-runs-");
  mkdirSync(join(project, ".cotal", "agents"), { recursive: true });
  writeFileSync(join(project, ".cotal", "agents", "worker.md"), ["---", "name: worker", "---", "You work.", ""].join("\n"));
}, 120_000);

afterAll(async () => {
  for (const m of managers) await m.stopWithSeats(operator).catch(() => undefined);
  await mesh?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** Publish a record as JetStream would store it: "stored", or "refused" when the broker refused the publish. */
function forge(subject: string, record: object): Promise<"stored" | "refused"> {
  return storeOutcome(mallory, subject, record);
}

/**
 * Every subject the attacker could put a record about `seat` on: the log's older layout (the seat
 * alone), the owner's own subject, and its own.
 */
function subjectsFor(seat: string): string[] {
  const root = `cotal.${mesh.space}.seat.${seat}`;
  return [root, `${root}.local.victim`, `${root}.local.mallory`];
}

async function seat(name: string): Promise<SeatView | undefined> {
  const ps = await callManager(nc, mesh.space, "ps", operator, { all: true }, { target: "victim" });
  return ps.seats.filter((s) => s.name === name).sort((a, b) => b.requestedAt - a.requestedAt)[0];
}

describe("a manager credential cannot forge another manager's seat log", () => {
  test("retired on another's live seat: the seat stays, a restarted owner adopts it, and the real stop retires it and revokes its credential", async () => {
    await callManager(nc, mesh.space, "spawn", operator, { agent: "echo", name: "target" }, { target: "victim" });
    await until(async () => (await seat("target"))?.state === "joined", 30_000, "target joined on victim", 100);
    const before = (await seat("target"))!;

    for (const subject of subjectsFor("local.target"))
      for (const manager of ["victim", "mallory"])
        await forge(subject, { type: "retired", seat: "local.target", uid: before.uid, epoch: before.epoch, ts: Date.now(), manager, reason: "forged" });

    // A restarted owner replays the log: the seat is still its own, running, the same process.
    const first = managers.pop()!;
    await first.stop();
    await startVictim();
    await until(async () => (await seat("target"))?.state === "joined", 30_000, "the restarted victim to adopt target", 100);
    expect(await seat("target")).toMatchObject({ uid: before.uid, pid: before.pid, state: "joined" });

    // The real stop works to the end: the process is gone, the incarnation retired, its credential revoked.
    const seatFolder = join(victimDir, "seats", "target");
    const creds = readFileSync(
      join(
        seatFolder,
        readdirSync(seatFolder).find((f) => f.endsWith(".creds"))!,
      ),
    );
    const stopped = await callManager(nc, mesh.space, "stop", operator, { name: "target" }, { target: "victim", timeoutMs: 30_000 });
    expect(stopped).toMatchObject({ stopped: true });
    expect(stopped.revoked).toBeGreaterThanOrEqual(1);
    expect(await seat("target")).toMatchObject({ state: "retired", reason: "stopped by local.cotal_cli" });
    await expect(connect({ servers: mesh.server.url, authenticator: credsAuthenticator(creds), maxReconnectAttempts: 0 })).rejects.toThrow(/Authorization/i);
  }, 120_000);

  test("the broker refuses records on another's subject, and on the seat log's older layout", async () => {
    const record = { type: "retired", seat: "local.anyone", uid: newLifecycleUid(), epoch: 0, ts: Date.now(), manager: "victim", reason: "forged" };
    const [older, owners, own] = subjectsFor("local.anyone");
    expect(await forge(older!, record)).toBe("refused");
    expect(await forge(owners!, record)).toBe("refused");
    // Its own subject it may write (it is a manager), but a record naming another manager there is not counted (above).
    expect(await forge(own!, { ...record, manager: "mallory" })).toBe("stored");
  });
});

describe("a manager credential cannot forge run records", () => {
  const run = (personas: number) =>
    callManager(
      nc,
      mesh.space,
      "run",
      operator,
      { personas: ["worker"], prompt: "work", parallel: personas, cwd: project },
      { target: "victim", timeoutMs: 60_000 },
    );
  const budget = () => callManager(nc, mesh.space, "budget", operator, {}, { target: "victim" });
  const forgeRuns = async (count: number, costUsd: number, ts: number) => {
    for (let i = 0; i < count; i++) {
      const runId = newLifecycleUid();
      for (const subject of subjectsFor(`cotal_run.${runId}`))
        for (const manager of ["victim", "mallory"])
          await forge(subject, {
            type: "run",
            seat: `cotal_run.${runId}`,
            uid: runId,
            epoch: 0,
            ts,
            manager,
            status: "ok",
            costUsd,
            costBasis: "client-estimate",
          });
    }
  };

  test("runs of cost 0 dated tomorrow do not drag the estimate to 0: a fan-out past the daily cap is refused", async () => {
    // Two real runs at $2: spent $4 of $10, an estimate of $2 a run.
    for (let i = 0; i < 2; i++) expect((await run(1)).results[0]).toMatchObject({ status: "ok", costUsd: 2 });
    expect(await budget()).toMatchObject({ medianRunUsd: 2, daily: { spentUsd: 4 } });

    await forgeRuns(20, 0, Date.now() + DAY_MS);
    // Four more runs at $2 would pass $10: refused before any starts.
    const fanOut = await run(4);
    expect(fanOut.results.map((r) => r.status)).toEqual(["skipped", "skipped", "skipped", "skipped"]);
    expect(fanOut.refused).toMatchObject({ cap: "daily", capUsd: 10, spentUsd: 4, estimateUsd: 8 });
    expect(await budget()).toMatchObject({ medianRunUsd: 2, daily: { spentUsd: 4 } });
  }, 120_000);

  test("a run of cost 1e12 written by another does not block the day: the next run starts", async () => {
    await forgeRuns(1, 1e12, Date.now());
    expect((await budget()).daily).toMatchObject({ spentUsd: 4, level: "ok" });
    const one = await run(1);
    expect(one.refused).toBeUndefined();
    expect(one.results[0]).toMatchObject({ status: "ok", costUsd: 2 });
  }, 60_000);
});

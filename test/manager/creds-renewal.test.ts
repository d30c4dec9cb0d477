// Credentials a manager mints expire (so their revocations leave the list), and a
// seat that ran longer than its credential lost its connection. The manager mints a running seat's
// credential again once a third of its life is left, writes it over the seat's file (0600), and the
// seat reconnects on it when the server closes its expired one. Black-box: a real operator-mode
// server, a manager on a minted `manager` credential asking 24 s seat credentials (its real option),
// a real echo seat process (the built `cotal agent echo`), DMs sent all across the first expiry.
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, credsAuthenticator, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { connectMesh, controlCaller, credsClaims, jetStreamConnection, logger } from "../../broker/internal.js";
import { ManagerService, renewalDueAt } from "../../manager/internal.js";
import { localPrincipal, MANAGER_COMMANDS, messageText, type SeatView } from "../../schemas/index.js";
import { buildCli, cotalBundle } from "../harness/cli.js";
import { TestMesh } from "../harness/mesh.js";
import { until } from "../../testbed/until.js";

const callManager = controlCaller(MANAGER_COMMANDS);
const operator = localPrincipal("cotal_cli");
// Long enough that a renewal, due with a third left (8 s), is done before the expiry on a loaded machine.
const LIFETIME_MS = 24_000;

let mesh: TestMesh;
let nc: NatsConnection;
let managerNc: NatsConnection | undefined;
let m: ManagerService | undefined;
const stateDir = mkdtempSync(join(tmpdir(), "cotal-renew-"));

beforeAll(async () => {
  await buildCli();
  // A DM in flight to the seat when its connection is cut is redelivered after the ack wait: short here.
  mesh = await TestMesh.startStatic("renew", { ackWaitMs: 3_000 });
  nc = await mesh.rawConnection();
}, 120_000);

afterAll(async () => {
  await m?.stopWithSeats(operator).catch(() => undefined);
  await managerNc?.close().catch(() => undefined);
  await mesh?.close();
  rmSync(stateDir, { recursive: true, force: true });
});

async function seatView(name: string): Promise<SeatView | undefined> {
  const ps = await callManager(nc, mesh.space, "ps", operator, { all: true }, { target: "renewer" });
  return ps.seats.find((s) => s.name === name);
}

describe("a running seat's credential is renewed before it expires", () => {
  test("the seat keeps receiving DMs across its first credential's expiry; the old credential is refused after it", async () => {
    const creds = await mesh.mint({ name: "renewer", profile: "manager" });
    managerNc = await connectMesh({ server: mesh.server.url, creds, name: "renewer" });
    m = await ManagerService.start(managerNc, {
      space: mesh.space,
      server: mesh.server.url,
      stateDir,
      instance: "renewer",
      mints: true,
      caller: localPrincipal("renewer"),
      jsConnection: jetStreamConnection(managerNc, creds),
      agentCommand: (agent) => [process.execPath, cotalBundle, "agent", agent],
      seatEnv: (extra) => ({ PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", COTAL_LOG_LEVEL: "warn", ...extra }),
      log: logger("test-manager"),
      heartbeatMs: 500,
      seatCredsLifetimeMs: LIFETIME_MS,
    });
    await callManager(nc, mesh.space, "spawn", operator, { agent: "echo", name: "keeper", channels: ["general"] }, { target: "renewer" });
    await until(async () => (await seatView("keeper"))?.state === "joined", 30_000, "keeper to join", 100);
    const joined = (await seatView("keeper"))!;

    const seatFolder = join(stateDir, "seats", "keeper");
    const credsFile = join(
      seatFolder,
      readdirSync(seatFolder).find((f) => f.endsWith(".creds"))!,
    );
    const first = readFileSync(credsFile);
    const firstExp = credsClaims(first)!.exp!;
    const life = firstExp - credsClaims(first)!.iat!;
    expect(life, "the manager asked its short lifetime").toBeGreaterThanOrEqual(LIFETIME_MS / 1000 - 1);
    expect(life).toBeLessThanOrEqual(LIFETIME_MS / 1000);

    // Control: a connection on the first credential alone (its file never renewed) is closed by the server at its expiry.
    let controlClosed = false;
    const control = await connect({ servers: mesh.server.url, authenticator: credsAuthenticator(first), maxReconnectAttempts: 0 });
    void control.closed().then(() => (controlClosed = true));

    // DMs all across the renewal and the first credential's expiry: every one is answered.
    const alice = await mesh.joined("alice");
    const answered = new Set<string>();
    const reading = (async () => {
      for await (const d of alice.deliveries) {
        answered.add(messageText(d.message));
        await d.ack();
      }
    })();
    const sent: string[] = [];
    let n = 0;
    const send = async () => {
      const text = `dm ${n++}`;
      sent.push(`echo: ${text}`);
      await alice.dm("local.keeper", text);
    };
    await send();
    while (Date.now() < (firstExp + 2) * 1000) {
      await send();
      await new Promise((r) => setTimeout(r, 500));
    }
    await until(() => controlClosed, 10_000, "the server to close the connection on the expired first credential");

    // The file was minted again, 0600, beside its mint request; and the first credential no longer connects.
    const renewed = readFileSync(credsFile);
    expect(renewed.equals(first)).toBe(false);
    expect(credsClaims(renewed)!.exp!).toBeGreaterThan(firstExp);
    expect(credsClaims(renewed)!.name).toBe("local.keeper");
    expect(statSync(credsFile).mode & 0o777).toBe(0o600);
    expect(statSync(credsFile.replace(/\.creds$/, ".mint.json")).mode & 0o777).toBe(0o600);
    expect(renewalDueAt(credsFile)).toBeGreaterThan(firstExp * 1000);
    await expect(connect({ servers: mesh.server.url, authenticator: credsAuthenticator(first), maxReconnectAttempts: 0 })).rejects.toThrow(
      /expired|Authorization/i,
    );

    // After the expiry the seat still answers, and nothing sent across it was lost.
    await send();
    await until(() => sent.every((s) => answered.has(s)), 30_000, "every DM sent across the expiry to be answered").catch((err: Error) => {
      throw new Error(`${err.message}; unanswered: ${sent.filter((s) => !answered.has(s)).join(", ")}`, { cause: err });
    });
    // The same process answered all along: it was not restarted on a credential read anew at its start.
    expect(await seatView("keeper")).toMatchObject({ state: "joined", pid: joined.pid, epoch: joined.epoch, restarts: 0 });
    alice.stopConsuming();
    await reading.catch(() => undefined);
  }, 120_000);
});

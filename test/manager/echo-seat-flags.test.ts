// An echo seat started as `cotal manager` starts it (dist/echo-seat.mjs with ECHO_SEAT_NODE_FLAGS,
// on a static mesh with a minted credential): the flags are on its command line, ahead of the
// bundle where node reads them, it joins, and with V8's smaller young generation and no
// optimizing compiler it still answers a burst of DMs, each exactly once, leaving nothing pending.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { leftPending } from "../../bench/context.js";
import { controlCaller, jetStreamConnection, logger } from "../../broker/internal.js";
import { ECHO_SEAT_NODE_FLAGS, echoSeatCommand, ManagerService } from "../../manager/index.js";
import { localPrincipal, MANAGER_COMMANDS, messageText, names } from "../../schemas/index.js";
import { buildCli, cotalBundle } from "../harness/cli.js";
import { TestMesh } from "../harness/mesh.js";
import { until } from "../../testbed/until.js";

const callManager = controlCaller(MANAGER_COMMANDS);
const operator = localPrincipal("cotal_cli");
const BURST = 60;

let mesh: TestMesh;
let nc: NatsConnection;
let mgr: ManagerService | undefined;
const stateDir = mkdtempSync(join(tmpdir(), "cotal-echo-flags-"));

beforeAll(async () => {
  await buildCli();
  mesh = await TestMesh.startStatic("echoflags");
  nc = await mesh.rawConnection();
}, 120_000);
afterAll(async () => {
  await mgr?.stopWithSeats(operator).catch(() => undefined);
  await mesh?.close();
  rmSync(stateDir, { recursive: true, force: true });
});

describe("echo seat process", () => {
  test("runs with its node flags and answers a burst of DMs once each, leaving nothing pending", async () => {
    const bundle = join(dirname(cotalBundle), "echo-seat.mjs");
    mgr = await ManagerService.start(nc, {
      space: mesh.space,
      server: mesh.server.url,
      stateDir,
      instance: "flags",
      mints: true,
      jsConnection: jetStreamConnection(nc, mesh.cliCreds),
      agentCommand: () => echoSeatCommand(bundle),
      seatEnv: (extra) => ({ PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", COTAL_LOG_LEVEL: "warn", ...extra }),
      log: logger("test-manager"),
      heartbeatMs: 500,
    });
    await callManager(nc, mesh.space, "spawn", operator, { agent: "echo", name: "flagged" }, { target: "flags" });
    let pid: number | undefined;
    await until(
      async () => {
        const ps = await callManager(nc, mesh.space, "ps", operator, { all: false }, { target: "flags" });
        const s = ps.seats.find((v) => v.name === "flagged");
        pid = s?.pid;
        return s?.state === "joined";
      },
      60_000,
      "the flagged echo seat to join",
      100,
    );

    // Node takes V8 flags only before the script: every one of them precedes the bundle.
    const argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
    const at = argv.indexOf(bundle);
    expect(at).toBeGreaterThan(0);
    for (const flag of ECHO_SEAT_NODE_FLAGS) expect(argv.slice(1, at)).toContain(flag);

    const alice = await mesh.joined("alice");
    const texts = Array.from({ length: BURST }, (_, i) => `ping ${i}`);
    await Promise.all(texts.map((t) => alice.dm("local.flagged", t)));
    const seen = new Map<string, number>();
    for await (const d of alice.deliveries) {
      const text = messageText(d.message);
      seen.set(text, (seen.get(text) ?? 0) + 1);
      await d.ack();
      if (seen.size === BURST) break;
    }
    expect([...seen.keys()].sort()).toEqual(texts.map((t) => `echo: ${t}`).sort());
    expect([...seen.values()].every((n) => n === 1)).toBe(true);

    // Both inboxes end empty: the seat acked every ping, alice every echo (none comes again).
    const jsm = await mesh.dataJsm();
    const inboxes: string[] = [];
    for await (const c of jsm.consumers.list(names.dmStream(mesh.space))) inboxes.push(c.name);
    expect(inboxes.length).toBeGreaterThanOrEqual(2);
    expect(await leftPending(jsm, names.dmStream(mesh.space), inboxes, 30_000)).toBe(0);
    expect(alive(pid!)).toBe(true);
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

// A managed Claude seat under tmux whose Claude config is not pre-seeded fails within the bound,
// naming the screen it stopped on. This needs a manager started with seedConfig off, which no
// `cotal` command does, so it stays in-process; the seats' wake, the agent file, the pty terminal host
// and restarts are tested through the shipped CLI in test/e2e/user-path-wake.e2e.test.ts.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { controlCaller } from "../../broker/index.js";
import type { ManagerService } from "../../manager/internal.js";
import { localPrincipal, MANAGER_COMMANDS, type SeatView } from "../../schemas/index.js";
import { startClaudeManager, type ClaudeHostOptions } from "../harness/claude-manager.js";
import { buildCli } from "../harness/cli.js";
import { TestMesh } from "../harness/mesh.js";
import { ModelDouble } from "../../testbed/model-double.js";
import { until } from "../../testbed/until.js";

const callManager = controlCaller(MANAGER_COMMANDS);
const operator = localPrincipal("cotal_cli");

let mesh: TestMesh;
let nc: NatsConnection;
let double: ModelDouble;
let root: string;
const managers: ManagerService[] = [];

beforeAll(async () => {
  await buildCli(); // also copies the bundles into plugin/bin
  root = mkdtempSync(join(tmpdir(), "cotal-managed-claude-"));
  mesh = await TestMesh.startStatic("crew");
  nc = await mesh.rawConnection();
  double = await ModelDouble.start();
}, 180_000);

afterAll(async () => {
  for (const m of managers) await m.stopWithSeats(operator).catch(() => undefined);
  await double?.close();
  await mesh?.close();
  rmSync(root, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
});

async function manager(instance: string, over: { claude?: Partial<ClaudeHostOptions> } = {}): Promise<{ m: ManagerService; stateDir: string }> {
  const { m, stateDir } = await startClaudeManager(mesh, nc, {
    root,
    instance,
    baseUrl: double.url,
    claude: { screenTimeoutMs: 30_000, ...over.claude },
    over: { heartbeatMs: 1_000 },
  });
  managers.push(m);
  return { m, stateDir };
}

async function seat(instance: string, name: string): Promise<SeatView | undefined> {
  const ps = await callManager(nc, mesh.space, "ps", operator, { all: true }, { target: instance });
  return ps.seats.filter((s) => s.name === name).sort((a, b) => b.requestedAt - a.requestedAt)[0];
}

async function untilState(instance: string, name: string, states: Array<SeatView["state"]>, ms: number): Promise<SeatView> {
  let last: SeatView | undefined;
  try {
    await until(async () => states.includes((last = await seat(instance, name))?.state ?? "requested"), ms, `${name} to be ${states.join(" or ")}`, 250);
  } catch (err) {
    throw new Error(`${(err as Error).message} (last: ${JSON.stringify(last)})`, { cause: err });
  }
  return last!;
}

describe("managed Claude seats under tmux", () => {
  it("a seat whose Claude config is not pre-seeded fails within the bound, naming the screen", async () => {
    // An empty config dir: what a fresh Claude shows first (the first-run screens) stops an unattended seat.
    await manager("host2", { claude: { seedConfig: false, screenTimeoutMs: 20_000 } });
    const work = mkdtempSync(join(root, "work-"));
    writeFileSync(join(work, "README"), "x");
    await callManager(nc, mesh.space, "spawn", operator, { agent: "claude", name: "carol", cwd: work }, { target: "host2", timeoutMs: 30_000 });
    const carol = await untilState("host2", "carol", ["retired"], 60_000);
    expect(carol.reason, JSON.stringify(carol)).toMatch(/^failed: the seat stopped on the first-run/);
    expect(carol.exit?.output).toMatch(/Claude Code/);
  }, 120_000);
});

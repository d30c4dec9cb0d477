// A managed Claude seat (the manager's tmux, the plugin, launch material, a minted agent
// credential on a static mesh) publishes its turn on events.local.<name>: the plane works the
// way seats really run, and an observer reads it.
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { controlCaller } from "../../broker/index.js";
import type { ManagerService } from "../../manager/index.js";
import { streamViolation } from "../../connector/internal.js";
import { frameOf, localPrincipal, MANAGER_COMMANDS } from "../../schemas/index.js";
import { startClaudeManager } from "../harness/claude-manager.js";
import { buildCli } from "../harness/cli.js";
import { TestMesh } from "../harness/mesh.js";
import { ModelDouble, newTurnText } from "../../testbed/model-double.js";
import { until } from "../../testbed/until.js";

const callManager = controlCaller(MANAGER_COMMANDS);
const operator = localPrincipal("cotal_cli");
const OPENING = "Report on the plane, please.";
const QUIET = "Work without a plane, please.";

let mesh: TestMesh;
let nc: NatsConnection;
let double: ModelDouble;
let root: string;
let m: ManagerService | undefined;
let stateDir: string;

beforeAll(async () => {
  await buildCli();
  root = mkdtempSync(join(tmpdir(), "cotal-managed-events-"));
  mesh = await TestMesh.startStatic("evm");
  nc = await mesh.rawConnection();
  double = await ModelDouble.start([
    { when: (r) => newTurnText(r).includes(OPENING), reply: ["Reporting: all quiet."] },
    { when: (r) => newTurnText(r).includes(QUIET), reply: ["Nothing to report."] },
  ]);
}, 180_000);
afterAll(async () => {
  await m?.stopWithSeats(operator).catch(() => undefined);
  await double?.close();
  await mesh?.close();
  rmSync(root, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
});

describe("the event plane of a managed seat", () => {
  it("a managed Claude seat's prompted turn reaches events.local.eve as ordered frames an observer reads", async () => {
    ({ m, stateDir } = await startClaudeManager(mesh, nc, {
      root,
      instance: "host1",
      baseUrl: double.url,
      claude: { screenTimeoutMs: 30_000 },
      over: { heartbeatMs: 1_000 },
    }));
    const work = mkdtempSync(join(root, "work-"));
    await callManager(nc, mesh.space, "spawn", operator, { agent: "claude", name: "eve", cwd: work, prompt: OPENING }, { target: "host1", timeoutMs: 30_000 });
    const observer = await mesh.endpoint("olga", { creds: await mesh.mint({ name: "olga", profile: "observer" }) });
    const frames = async () => (await observer.history("events.local.eve")).map((h) => frameOf(h.message.parts)!);
    await until(
      async () => (await frames()).some((f) => f.events.some((e) => e.type === "TEXT_MESSAGE_CONTENT" && e.delta === "Reporting: all quiet.")),
      120_000,
      "eve's reply on her plane",
      500,
    );
    await until(async () => (await frames()).some((f) => f.events.some((e) => e.type === "RUN_FINISHED")), 20_000, "eve's run finished", 250);
    const got = await frames();
    expect(got.map((f) => f.seq)).toEqual(got.map((_, i) => i + 1));
    const events = got.flatMap((f) => f.events.map((e) => ({ ...e, runId: e.runId ?? f.runId })));
    expect(events.find((e) => e.type === "TEXT_MESSAGE_START" && e.role === "user")).toBeDefined();
    expect(streamViolation(events)).toBeUndefined();

    // spawn noEvents (cotal spawn --no-events): the launch material says so, and the seat's turn leaves its plane empty.
    await callManager(
      nc,
      mesh.space,
      "spawn",
      operator,
      { agent: "claude", name: "quinn", cwd: work, prompt: QUIET, noEvents: true },
      { target: "host1", timeoutMs: 30_000 },
    );
    await until(() => existsSync(join(stateDir, "seats", "quinn", "launch.json")), 30_000, "quinn's launch material");
    expect(JSON.parse(readFileSync(join(stateDir, "seats", "quinn", "launch.json"), "utf8"))).toMatchObject({ noEvents: true });
    const roster = await observer.roster();
    let wasWorking = false;
    await until(
      () => {
        const st = roster.entries().find((e) => e.id === "local.quinn")?.status;
        wasWorking ||= st === "working";
        return wasWorking && st === "idle";
      },
      120_000,
      "quinn took its turn and went idle",
      50,
    );
    expect(await observer.history("events.local.quinn")).toEqual([]);
  }, 300_000);
});

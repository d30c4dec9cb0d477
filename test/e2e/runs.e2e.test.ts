// One-shot runs with the real `claude` CLI against the model double, through an
// in-process manager on a static mesh, for what the CLI does not reach: cotal_run from inside a
// session on an agent's credential; a timed-out run counted at the median cost with its whole
// process group gone; output that violates the schema is `error`, apart from a missing result; a
// denied tool is listed; separate requests share the manager's slots; an agent may not choose
// where a run works; the headroom under a cap passed as --max-budget-usd. A run with a JSON
// schema, the budget gauge, a fan-out and the daily cap refusing one are tested through the
// shipped CLI in test/e2e/user-path-runs.e2e.test.ts.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { controlCaller, jetStreamConnection, logger, PermissionDeniedError } from "../../broker/index.js";
import { groupAlive, RunService, type ManagerOptions, type ManagerService } from "../../manager/internal.js";
import { localPrincipal, MANAGER_COMMANDS, principal, type TableArgs } from "../../schemas/index.js";
import { claudeOptions, startClaudeManager } from "../harness/claude-manager.js";
import { buildCli } from "../harness/cli.js";
import { STATIC_TEST_CHANNELS, TestMesh } from "../harness/mesh.js";
import { call, mcpClient, startConnector } from "../connector/helpers.js";
import { allText, lastUserText, ModelDouble, type RecordedRequest } from "../../testbed/model-double.js";

const callManager = controlCaller(MANAGER_COMMANDS);
const operator = localPrincipal("cotal_cli");
const MODEL = "claude-sonnet-4-5";
const SCHEMA = {
  type: "object",
  properties: { verdict: { type: "string" }, score: { type: "number" } },
  required: ["verdict", "score"],
  additionalProperties: false,
};

let mesh: TestMesh;
let nc: NatsConnection;
let double: ModelDouble;
let root: string;
let work: string;
const managers: ManagerService[] = [];

const asked = (word: string) => (r: RecordedRequest) => lastUserText(r).includes(word);

beforeAll(async () => {
  await buildCli();
  root = mkdtempSync(join(tmpdir(), "cotal-runs-"));
  work = join(root, "work");
  mkdirSync(join(work, ".cotal", "agents"), { recursive: true });
  writeFileSync(join(work, ".cotal", "agents", "reviewer.md"), ["---", "name: reviewer", `model: ${MODEL}`, "---", "You review diffs.", ""].join("\n"));
  mesh = await TestMesh.startStatic("runs");
  nc = await mesh.rawConnection();
  double = await ModelDouble.start();
  await manager("r1");
}, 120_000);

afterAll(async () => {
  for (const m of managers) await m.stop().catch(() => undefined);
  await double?.close();
  await mesh?.close();
  rmSync(root, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
});

async function manager(instance: string, over: Partial<ManagerOptions> = {}): Promise<ManagerService> {
  const { m } = await startClaudeManager(mesh, nc, { root, instance, baseUrl: double.url, over: { budget: {}, ...over } });
  managers.push(m);
  return m;
}

const run = (instance: string, args: TableArgs<typeof MANAGER_COMMANDS, "run">, timeoutMs = 120_000) =>
  callManager(nc, mesh.space, "run", operator, { cwd: work, ...args }, { target: instance, timeoutMs });

/** Pids of claude processes working in `cwd` (their /proc cwd), with their process groups. */
function claudeProcessesIn(cwd: string): Array<{ pid: number; pgid: number }> {
  const out: Array<{ pid: number; pgid: number }> = [];
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const cmd = readFileSync(`/proc/${d}/cmdline`, "utf8");
      if (!cmd.includes("claude")) continue;
      const stat = readFileSync(`/proc/${d}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (fields[0] === "Z") continue;
      if (realpathSync(`/proc/${d}/cwd`) !== realpathSync(cwd)) continue;
      out.push({ pid: Number(d), pgid: Number(fields[2]) });
    } catch {
      /* gone meanwhile */
    }
  }
  return out;
}

describe("one-shot runs", () => {
  it("from inside a session, cotal_run on an agent's own minted credential dispatches a run under the same gates and returns the typed result", async () => {
    double.push({ when: asked("TOOL-RUN"), reply: [{ tool: "StructuredOutput", input: { verdict: "fine", score: 1 } }] });
    const creds = await mesh.mint({ name: "bob", profile: "agent", allowSubscribe: STATIC_TEST_CHANNELS, allowPublish: STATIC_TEST_CHANNELS });
    const s = await startConnector(mesh, "bob", { launch: { creds } });
    const m = await mcpClient(s.connector);
    const here = process.cwd();
    process.chdir(work); // an agent's run works in the manager's folder
    try {
      const r = await call(m.client, "cotal_run", { personas: ["reviewer"], prompt: "TOOL-RUN please", jsonSchema: SCHEMA, timeout: "60s", model: MODEL });
      expect(r.isError, r.text).toBe(false);
      const [line, json] = r.text.split("\n");
      expect(line).toMatch(/^reviewer: ok; cost \$\d+\.\d{4} \(client-side estimate\); model claude-sonnet-4-5 \(explicit\)$/);
      expect(JSON.parse(json!)).toEqual([
        expect.objectContaining({ status: "ok", output: { verdict: "fine", score: 1 }, modelSource: "explicit", costBasis: "client-estimate" }),
      ]);
      // It was recorded in the seat log like any other run.
      const b = await callManager(nc, mesh.space, "budget", operator, {}, { target: "r1" });
      expect(b.daily.runs).toBeGreaterThanOrEqual(1);
      // Its credential reaches the run command only: spawn is refused by the broker.
      const asBob = await mesh.endpoint("bob", { creds });
      const spawn = await callManager(asBob.nc, mesh.space, "spawn", asBob.me, { agent: "echo" }, { target: "r1" }).catch((e: unknown) => e);
      await asBob.close();
      expect(spawn).toBeInstanceOf(PermissionDeniedError);
    } finally {
      process.chdir(here);
      await m.close();
      await s.close();
    }
  }, 120_000);

  it("a run past its timeout returns timeout, counts at the median cost, and leaves no process behind", async () => {
    double.push({ when: asked("SLOW"), reply: ["too late"], delayMs: 120_000 });
    const seen = new Map<number, number>();
    const watching = setInterval(() => {
      for (const p of claudeProcessesIn(work)) seen.set(p.pid, p.pgid);
    }, 100);
    let reply;
    try {
      reply = await run("r1", { personas: ["reviewer"], prompt: "SLOW please", timeoutMs: 4_000 });
    } finally {
      clearInterval(watching);
    }
    const r = reply.results[0]!;
    expect(r, JSON.stringify(r)).toMatchObject({ status: "timeout", error: { kind: "timeout" } });
    expect(r.latencyMs).toBeGreaterThanOrEqual(4_000);
    // Claude printed no cost: the run counts at the median of recent runs, labelled so.
    expect(r.costBasis).toBe("median-estimate");
    expect(r.costUsd).toBeGreaterThan(0);
    expect(seen.size, "the run's claude process was seen while it ran").toBeGreaterThan(0);
    // Returned only once its whole process group was gone: nothing of it is left now.
    for (const [pid, pgid] of seen) {
      expect(groupAlive(pgid), `process group ${pgid} still has processes`).toBe(false);
      expect(() => process.kill(pid, 0), `pid ${pid} still runs`).toThrow();
    }
  }, 60_000);

  it("output that violates the schema is an error, distinct from a missing result; a denied tool is listed", async () => {
    const bad = { tool: "StructuredOutput", input: { verdict: 5 } };
    // The CLI asks again after each invalid answer, 5 attempts in all (2.1.332), then gives up.
    double.push(...Array.from({ length: 5 }, () => ({ when: (r: RecordedRequest) => allText(r).includes("REVIEW-BAD"), reply: [bad] })));
    const violated = (await run("r1", { personas: ["reviewer"], prompt: "REVIEW-BAD this", jsonSchema: SCHEMA })).results[0]!;
    expect(violated, JSON.stringify(violated)).toMatchObject({ status: "error", error: { kind: "schema-violation" } });
    expect(violated.error!.message).toMatch(/did not match the JSON schema/);
    expect(violated.costUsd).toBeGreaterThan(0);
    expect(double.remainingSteps).toBe(0);

    double.push({ when: asked("REVIEW-TEXT"), reply: ["no structured output here"] });
    const missing = (await run("r1", { personas: ["reviewer"], prompt: "REVIEW-TEXT this", jsonSchema: SCHEMA })).results[0]!;
    expect(missing, JSON.stringify(missing)).toMatchObject({ status: "error", error: { kind: "no-result" } });

    double.push(
      { when: asked("WRITE-IT"), reply: [{ tool: "Write", input: { file_path: join(work, "x.txt"), content: "x" } }] },
      { reply: ["could not write"] },
    );
    const denied = (await run("r1", { personas: ["reviewer"], prompt: "WRITE-IT now", model: "claude-haiku-4-5" })).results[0]!;
    expect(denied, JSON.stringify(denied)).toMatchObject({
      status: "ok",
      output: expect.any(String),
      permissionDenials: ["Write"],
      model: "claude-haiku-4-5",
      modelSource: "explicit",
    });
  }, 180_000);

  it("runs of separate requests share the manager's slots: with maxRuns 1 the second waits for the first", async () => {
    double.push(...Array.from({ length: 2 }, () => ({ when: asked("SOLO-RUN"), reply: ["solo done"], delayMs: 1_500 })));
    const runs = await RunService.open({
      space: mesh.space,
      instance: "solo",
      stateDir: join(root, "solo"),
      jsConnection: jetStreamConnection(nc, mesh.cliCreds),
      runtimes: claudeOptions(double.url, join(root, "solo-home")),
      budget: {},
      maxRuns: 1,
      log: logger("test-runs"),
    });
    const args = { personas: ["reviewer"], prompt: "SOLO-RUN", timeoutMs: 60_000, parallel: 1, maxParallel: 4, cwd: work };
    const [a, b] = await Promise.all([runs.run(args, operator), runs.run(args, operator)]);
    expect([a.results[0]!.status, b.results[0]!.status]).toEqual(["ok", "ok"]);
    const arrivals = double.mainRequests
      .filter((r) => lastUserText(r).includes("SOLO-RUN"))
      .map((r) => r.receivedAt)
      .sort((x, y) => x - y);
    expect(arrivals[1]! - arrivals[0]!).toBeGreaterThanOrEqual(1_400);
  }, 60_000);

  it("an agent may not choose where a run works; a missing agent file refuses the request unexecuted", async () => {
    const agent = principal("local", "alice");
    const refused = await callManager(nc, mesh.space, "run", agent, { personas: ["reviewer"], prompt: "x", cwd: work }, { target: "r1" }).catch(
      (e: unknown) => e,
    );
    expect(refused).toMatchObject({ code: "cwd-not-allowed" });
    const missing = await run("r1", { personas: ["nobody"], prompt: "x" }).catch((e: unknown) => e);
    expect(missing).toMatchObject({ outcome: "not-executed" });
  }, 30_000);

  // Last: the run stops mid-script, so steps it did not play stay at the head of the double's script.
  it("a run under a cap gets the headroom as --max-budget-usd: a run that costs more stops there as error budget", async () => {
    const b = await callManager(nc, mesh.space, "budget", operator, {}, { target: "r1" });
    await manager("tight", { budget: { dailyUsd: b.daily.spentUsd + b.medianRunUsd * 1.5 } });
    const long = (r: RecordedRequest) => allText(r).includes("LONG-RUN");
    double.push(
      ...Array.from({ length: 4 }, () => ({ when: long, reply: [{ tool: "Read", input: { file_path: join(work, ".cotal", "agents", "reviewer.md") } }] })),
    );
    const r = (await run("tight", { personas: ["reviewer"], prompt: "LONG-RUN read it again and again" })).results[0]!;
    expect(r, JSON.stringify(r)).toMatchObject({ status: "error", error: { kind: "budget" } });
    expect(r.error!.message).toMatch(/--max-budget-usd/);
  }, 120_000);
});

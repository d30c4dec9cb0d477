// `cotal run` and `cotal budget` through the shipped CLI on a secure mesh: a manager
// whose Claude is the real CLI against the model double; the run reports the cost and usage the
// CLI returned, `cotal budget --json` shows them in today's gauge, and with the mesh's cap
// (.cotal/budget.json) spent a fan-out exits 1 naming the cap, the spend and the estimate.
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { BudgetReply, RunReply } from "../../schemas/index.js";
import { claudeEnv } from "../harness/claude-runner.js";
import { buildCli, cleanEnv, CotalProcess, freePort, runCotal, type CliResult } from "../harness/cli.js";
import { ModelDouble } from "../../testbed/model-double.js";
import { until } from "../../testbed/until.js";

let project: string;
let double: ModelDouble;
const managers: CotalProcess[] = [];
const cotal = (...args: string[]) => runCotal(args, { cwd: project, timeoutMs: 90_000 });

function ok(r: CliResult): CliResult {
  expect(r.code, `exit code; stdout: ${r.stdout}\nstderr: ${r.stderr}`).toBe(0);
  return r;
}

function startManager(instance: string, extra: Record<string, string> = {}): void {
  const stateDir = join(project, `state-${instance}`);
  const home = join(project, `home-${instance}`);
  mkdirSync(stateDir, { recursive: true });
  mkdirSync(home, { recursive: true });
  const env = cleanEnv({ ...claudeEnv({ baseUrl: double.url, home }), COTAL_LOG_LEVEL: "warn", ...extra });
  managers.push(CotalProcess.spawn(["manager", "--instance", instance, "--state-dir", stateDir], { cwd: project, env }));
}

async function listed(instance: string): Promise<void> {
  await until(async () => (await cotal("ps", "--json")).stdout.includes(`"instance": "${instance}"`), 30_000, `manager ${instance} to be listed`);
}

beforeAll(async () => {
  await buildCli();
  project = await mkdtemp(join(tmpdir(), "cotal-run-cli-"));
  mkdirSync(join(project, ".cotal", "agents"), { recursive: true });
  writeFileSync(
    join(project, ".cotal", "agents", "summarizer.md"),
    ["---", "name: summarizer", "model: claude-sonnet-4-5", "---", "You summarise logs.", ""].join("\n"),
  );
  writeFileSync(join(project, "verdict.json"), JSON.stringify({ type: "object", properties: { summary: { type: "string" } }, required: ["summary"] }));
  double = await ModelDouble.start([{ reply: [{ tool: "StructuredOutput", input: { summary: "all quiet" } }] }]);
  ok(await cotal("up", "--detach", "--port", String(await freePort())));
}, 120_000);

afterAll(async () => {
  for (const m of managers) await m.stop("SIGTERM", 20_000).catch(() => undefined);
  if (existsSync(join(project, ".cotal", "mesh.json"))) await cotal("down").catch(() => undefined);
  await double?.close();
  await rm(project, { recursive: true, force: true });
});

describe("cotal run and cotal budget", () => {
  it("cotal run against the model double reports the cost and usage the double's tokens came to, and cotal budget --json shows them in today's gauge", async () => {
    startManager("runner");
    await listed("runner");
    const before = ok(await cotal("budget", "--json", "--on", "runner")).json<BudgetReply>();
    const r = ok(
      await cotal(
        "run",
        "summarizer",
        "--prompt",
        "Summarise the log",
        "--json-schema",
        "verdict.json",
        "--timeout",
        "120s",
        "--on",
        "runner",
        "--task",
        "log-42",
        "--json",
      ),
    ).json<RunReply>();
    expect(r.results).toHaveLength(1);
    const result = r.results[0]!;
    expect(result).toMatchObject({
      status: "ok",
      output: { summary: "all quiet" },
      persona: "summarizer",
      modelSource: "agent-file",
      costBasis: "client-estimate",
    });
    expect(result.costUsd).toBeGreaterThan(0);
    expect(result.usage?.input_tokens).toBeGreaterThan(0);

    const after = ok(await cotal("budget", "--json", "--on", "runner")).json<BudgetReply>();
    expect(after.daily.runs).toBe(before.daily.runs + 1);
    expect(after.daily.spentUsd).toBeCloseTo(before.daily.spentUsd + result.costUsd, 10);
    expect(after.tasks).toEqual([expect.objectContaining({ cap: "task", task: "log-42", runs: 1, spentUsd: result.costUsd })]);
    expect(after.costBasis).toBe("client-estimate");
    // Without --json: a line per run, then its output, indented.
    const plain = ok(await cotal("run", "summarizer", "--prompt", "Say something", "--on", "runner"));
    expect(plain.stdout).toMatch(
      /^summarizer [a-z2-7]{26}: ok, \$\d+\.\d{4} \(client-side estimate\), \d+ ms, model claude-sonnet-4-5 \(agent-file\), session [0-9a-f-]{36}\n {2}OK\.\n$/,
    );
    const text = ok(await cotal("budget", "--on", "runner"));
    expect(text.stdout).toMatch(/^today \(UTC \d{4}-\d\d-\d\d\): \$\d+\.\d{4} in \d+ runs?, no cap$/m);
    expect(text.stdout).toMatch(/^task log-42: /m);
  }, 180_000);

  it("with the mesh's daily cap (.cotal/budget.json) already spent, a fan-out is refused before it starts, naming the cap, the spend and the estimate (exit 1)", async () => {
    writeFileSync(join(project, ".cotal", "budget.json"), JSON.stringify({ dailyUsd: 0.0001 }));
    startManager("capped");
    await listed("capped");
    const mainBefore = double.mainRequests.length;
    const r = await cotal("run", "summarizer", "--prompt", "again", "--parallel", "3", "--on", "capped");
    expect(r.code, r.stderr).toBe(1);
    expect(r.stdout).toMatch(
      /^Refused by the daily cap \(UTC \d{4}-\d\d-\d\d\): \$\d+\.\d{4} spent \+ \$\d+\.\d{4} estimated would pass \$0\.0001; nothing was started\.$/m,
    );
    expect(double.mainRequests.length).toBe(mainBefore);
    const gauge = (await cotal("budget", "--json", "--on", "capped")).json<BudgetReply>();
    expect(gauge.daily).toMatchObject({ capUsd: 0.0001, level: "stop" });
  }, 120_000);

  it("refuses bad input before asking anyone: a bare timeout, a schema file that is not JSON", async () => {
    const bare = await cotal("run", "summarizer", "--prompt", "x", "--timeout", "30");
    expect(bare.code).toBe(2);
    expect(bare.stderr).toMatch(/--timeout.*no unit/);
    writeFileSync(join(project, "broken.json"), "{");
    const broken = await cotal("run", "summarizer", "--prompt", "x", "--json-schema", "broken.json");
    expect(broken.code).toBe(2);
    expect(broken.stderr).toMatch(/not valid JSON/);
  }, 60_000);
});

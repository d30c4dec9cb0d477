// `cotal run` with a pi persona, through the shipped CLI only: `cotal up -d` in a fresh folder from
// a shell whose own ~/.pi/agent/models.json names the Anthropic Messages double as a provider (its
// key read from a variable) and whose settings.json picks it, as a pi user's would. The run returns
// ok with the model's output, pi's cost estimate, token usage and session id; the persona reached
// the model in its system prompt; the key went through the environment only. A bash call the deny
// floor covers is blocked by Cotal's extension in the real CLI; a JSON schema, which `pi -p` cannot
// hold to, is refused before anything is sent.
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findNatsServer } from "../../broker/index.js";
import type { RunReply } from "../../schemas/index.js";
import { buildCli, cleanEnv, freePort, runCotal, exitedOk } from "../harness/cli.js";
import { writePiConfig } from "../harness/runtime-shell.js";
import { allText, ModelDouble, systemText } from "../../testbed/model-double.js";
import { expectFloorRefusedToModel, expectSchemaRefusedUnsent } from "../harness/run-cases.js";

const KEY_VAR = "DOUBLE_PI_KEY";
const KEY = "sk-pi-double-secret-0123456789";

let project: string;
let model: ModelDouble;
let shell: NodeJS.ProcessEnv;

const cotal = (args: string[]) => runCotal(args, { cwd: project, env: shell, timeoutMs: 300_000 });
const ok = exitedOk;
const mains = (marker: string) => model.mainRequests.filter((r) => allText(r).includes(marker));

beforeAll(async () => {
  await buildCli();
  project = mkdtempSync(join(tmpdir(), "cotal-pi-run-"));
  model = await ModelDouble.start([
    { when: (r) => allText(r).includes("RUN-PI"), reply: ["pi says hi"] },
    { when: (r) => allText(r).includes("RUN-FLOOR"), reply: [{ tool: "bash", input: { command: "sudo rm -rf /tmp/x" } }] },
    { afterToolResult: "bash", reply: ["The command was refused."] },
  ]);
  const home = join(project, "home");
  writePiConfig(home, model.url, KEY_VAR);
  mkdirSync(join(project, ".cotal", "agents"), { recursive: true });
  writeFileSync(join(project, ".cotal", "agents", "coder.md"), ["---", "name: coder", "runtime: pi", "---", "You are CODER-PERSONA, terse.", ""].join("\n"));
  shell = cleanEnv({ HOME: home, NATS_SERVER_BIN: findNatsServer(), [KEY_VAR]: KEY, COTAL_SPACE: `pirun-${process.pid}` });
  ok(await cotal(["up", "-d", "--port", String(await freePort())]));
}, 180_000);

afterAll(async () => {
  if (project) await cotal(["down"]).catch(() => undefined);
  await model?.close();
  if (project) await rm(project, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
});

describe("cotal run with a pi persona, through the shipped CLI", () => {
  it("returns ok with the model's output, pi's cost estimate and token usage, using the user's own pi provider", async () => {
    const r = await cotal(["run", "coder", "--prompt", "RUN-PI say hi", "--json"]);
    const result = r.json<RunReply>().results[0];
    expect(result, `${r.stdout}\n${r.stderr}`).toMatchObject({
      status: "ok",
      output: "pi says hi",
      persona: "coder",
      costUsd: 0,
      costBasis: "client-estimate",
    });
    expect(r.code).toBe(0);
    expect(result!.sessionId).toMatch(/^[0-9a-f-]{36}$/);
    expect(result!.usage?.input_tokens).toBeGreaterThan(0);
    const turn = mains("RUN-PI")[0]!;
    expect(systemText(turn)).toContain("CODER-PERSONA");
    expect(turn.headers["x-api-key"]).toBe(KEY);
    const pid = JSON.parse(readFileSync(join(project, ".cotal", "run", "manager.json"), "utf8")).pid as number;
    expect(readFileSync(`/proc/${pid}/cmdline`, "utf8")).not.toContain(KEY);
  }, 300_000);

  it("the deny floor holds in the real CLI: the model's `sudo rm -rf` is blocked and it is told so", async () => {
    await expectFloorRefusedToModel({ project, cotal, requests: mains }, "clean up", "The command was refused.", "Cotal's deny floor");
  }, 300_000);

  it("a JSON schema is refused before anything is sent, naming why", () => expectSchemaRefusedUnsent({ project, cotal, requests: mains }), 120_000);

  it("cotal status names pi's configuration (the user's models.json, default model, key variable), never the key", async () => {
    const status = ok(await cotal(["status"]));
    expect(status.stdout).toMatch(/pi config: +/);
    expect(status.stdout).toContain(`models ${join(project, "home", ".pi", "agent", "models.json")}; default double/claude-double; keys from ${KEY_VAR}`);
    expect(status.stdout).not.toContain(KEY);
  });
});

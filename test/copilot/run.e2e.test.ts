// `cotal run` with a GitHub Copilot CLI persona, through the shipped CLI only: `cotal up -d` in a
// fresh folder from a shell that names a provider of the user's own (COPILOT_PROVIDER_* and
// COPILOT_MODEL: the Anthropic Messages double), as a Copilot user with their own key would. The
// run returns ok with the model's output and Copilot's session id; the persona reached the model
// as instructions; the key went through the environment only. With the shell allowed
// (allowedTools: Bash), a command the deny floor covers is still refused by Cotal's PreToolUse
// hook in the real CLI; a JSON schema, which Copilot cannot hold to, is refused before anything is sent.
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findNatsServer } from "../../broker/index.js";
import type { RunReply } from "../../schemas/index.js";
import { buildCli, cleanEnv, freePort, runCotal, exitedOk } from "../harness/cli.js";
import { copilotShell } from "../harness/runtime-shell.js";
import { allText, ModelDouble, systemText } from "../../testbed/model-double.js";
import { expectFloorRefusedToModel, expectSchemaRefusedUnsent } from "../harness/run-cases.js";

const KEY = "sk-copilot-double-secret-0123456789";

let project: string;
let model: ModelDouble;
let shell: NodeJS.ProcessEnv;

const cotal = (args: string[]) => runCotal(args, { cwd: project, env: shell, timeoutMs: 300_000 });
const ok = exitedOk;
const mains = (marker: string) => model.mainRequests.filter((r) => allText(r).includes(marker));

beforeAll(async () => {
  await buildCli();
  project = mkdtempSync(join(tmpdir(), "cotal-copilot-run-"));
  model = await ModelDouble.start([
    { when: (r) => allText(r).includes("RUN-COPILOT"), reply: ["copilot says hi"] },
    { when: (r) => allText(r).includes("RUN-FLOOR"), reply: [{ tool: "bash", input: { command: "git reset --hard HEAD~3", description: "reset" } }] },
    { afterToolResult: "bash", reply: ["The reset was refused."] },
  ]);
  const home = join(project, "home");
  mkdirSync(join(project, ".cotal", "agents"), { recursive: true });
  writeFileSync(
    join(project, ".cotal", "agents", "coder.md"),
    ["---", "name: coder", "runtime: copilot", "allowedTools: [Bash]", "---", "You are CODER-PERSONA, terse.", ""].join("\n"),
  );
  shell = cleanEnv({ HOME: home, NATS_SERVER_BIN: findNatsServer(), ...copilotShell(model.url, KEY), COTAL_SPACE: `cprun-${process.pid}` });
  ok(await cotal(["up", "-d", "--port", String(await freePort())]));
}, 180_000);

afterAll(async () => {
  if (project) await cotal(["down"]).catch(() => undefined);
  await model?.close();
  if (project) await rm(project, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
});

describe("cotal run with a GitHub Copilot CLI persona, through the shipped CLI", () => {
  it("returns ok with the model's output and session, using the user's own provider; the persona is an instruction", async () => {
    const r = await cotal(["run", "coder", "--prompt", "RUN-COPILOT say hi", "--json"]);
    const result = r.json<RunReply>().results[0];
    expect(result, `${r.stdout}\n${r.stderr}`).toMatchObject({ status: "ok", output: "copilot says hi", persona: "coder", costUsd: 0, costBasis: "usage" });
    expect(r.code).toBe(0);
    expect(result!.sessionId).toMatch(/^[0-9a-f-]{36}$/);
    const turn = mains("RUN-COPILOT")[0]!;
    expect(systemText(turn) + allText(turn)).toContain("CODER-PERSONA");
    expect(turn.headers["x-api-key"]).toBe(KEY);
    const pid = JSON.parse(readFileSync(join(project, ".cotal", "run", "manager.json"), "utf8")).pid as number;
    expect(readFileSync(`/proc/${pid}/cmdline`, "utf8")).not.toContain(KEY);
  }, 300_000);

  it("the deny floor holds with the shell allowed: the model's `git reset --hard` is refused by Cotal's hook and it is told which rule", async () => {
    await expectFloorRefusedToModel({ project, cotal, requests: mains }, "reset it", "The reset was refused.", "git reset --hard*", false);
  }, 300_000);

  it("a JSON schema is refused before anything is sent, naming why", () => expectSchemaRefusedUnsent({ project, cotal, requests: mains }), 120_000);

  it("cotal status names Copilot's configuration (the provider variables by name), never the key", async () => {
    const status = ok(await cotal(["status"]));
    expect(status.stdout).toMatch(/copilot config: +no config\.json in .*; provider anthropic at COPILOT_PROVIDER_BASE_URL; model from COPILOT_MODEL/);
    expect(status.stdout).not.toContain(KEY);
  });
});

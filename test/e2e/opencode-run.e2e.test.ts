// `cotal run` with an OpenCode persona, through the shipped CLI only: `cotal up -d` in a
// fresh folder from a shell whose own ~/.config/opencode/opencode.json names the Anthropic
// Messages double as its provider's base URL and reads the key from a variable ({env:…}), as an
// OpenCode user's would. The run returns ok with the model's output, OpenCode's cost estimate and
// token usage and its session id; the persona reached the model as instructions; the key went
// through the environment only. A bash call the deny floor covers is refused by the real CLI; a
// JSON schema, which `opencode run` cannot hold to, is refused before anything is sent.
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findNatsServer } from "../../broker/index.js";
import type { RunReply } from "../../schemas/index.js";
import { buildCli, cleanEnv, freePort, runCotal, exitedOk } from "../harness/cli.js";
import { lastUserText, ModelDouble, systemText } from "../../testbed/model-double.js";
import { expectFloorRefusedToModel, expectSchemaRefusedUnsent, expectStatusNamesConfigNotKey } from "../harness/run-cases.js";

const KEY_VAR = "DOUBLE_OPENCODE_KEY";
const KEY = "sk-opencode-double-secret-0123456789";

let project: string;
let model: ModelDouble;
let shell: NodeJS.ProcessEnv;

const cotal = (args: string[]) => runCotal(args, { cwd: project, env: shell, timeoutMs: 300_000 });
const ok = exitedOk;
const mains = (marker: string) => model.mainRequests.filter((r) => lastUserText(r).includes(marker) || JSON.stringify(r.body?.messages ?? []).includes(marker));

beforeAll(async () => {
  await buildCli();
  project = mkdtempSync(join(tmpdir(), "cotal-opencode-run-"));
  model = await ModelDouble.start([
    { when: (r) => lastUserText(r).includes("RUN-OPENCODE"), reply: ["opencode says hi"] },
    { when: (r) => lastUserText(r).includes("RUN-FLOOR"), reply: [{ tool: "bash", input: { command: "git push --force origin main", description: "push" } }] },
    { afterToolResult: "bash", reply: ["The push was refused."] },
  ]);
  const home = join(project, "home");
  mkdirSync(join(home, ".config", "opencode"), { recursive: true });
  writeFileSync(
    join(home, ".config", "opencode", "opencode.json"),
    JSON.stringify({
      model: "anthropic/claude-double",
      provider: { anthropic: { options: { baseURL: `${model.url}/v1`, apiKey: `{env:${KEY_VAR}}` }, models: { "claude-double": { name: "Claude double" } } } },
    }),
  );
  mkdirSync(join(project, ".cotal", "agents"), { recursive: true });
  writeFileSync(
    join(project, ".cotal", "agents", "coder.md"),
    ["---", "name: coder", "runtime: opencode", "---", "You are CODER-PERSONA, terse.", ""].join("\n"),
  );
  shell = cleanEnv({ HOME: home, NATS_SERVER_BIN: findNatsServer(), OPENCODE_DISABLE_MODELS_FETCH: "1", [KEY_VAR]: KEY, COTAL_SPACE: `ocrun-${process.pid}` });
  ok(await cotal(["up", "-d", "--port", String(await freePort())]));
}, 180_000);

afterAll(async () => {
  if (project) await cotal(["down"]).catch(() => undefined);
  await model?.close();
  if (project) await rm(project, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
});

describe("cotal run with an OpenCode persona, through the shipped CLI", () => {
  it("returns ok with the model's output, OpenCode's cost estimate and token usage, using the user's own OpenCode provider", async () => {
    const r = await cotal(["run", "coder", "--prompt", "RUN-OPENCODE say hi", "--json"]);
    const result = r.json<RunReply>().results[0];
    expect(result, `${r.stdout}\n${r.stderr}`).toMatchObject({
      status: "ok",
      output: "opencode says hi",
      persona: "coder",
      costUsd: 0,
      costBasis: "client-estimate",
    });
    expect(r.code).toBe(0);
    expect(result!.sessionId).toMatch(/^ses_/);
    expect(result!.usage?.input_tokens).toBeGreaterThan(0);
    const turn = mains("RUN-OPENCODE")[0]!;
    // The persona reached the model as instructions, the key as the provider's key (from {env:…}).
    expect(systemText(turn)).toContain("CODER-PERSONA");
    expect(turn.headers["x-api-key"]).toBe(KEY);
  }, 300_000);

  it("the deny floor holds in the real CLI: the model's `git push --force` is refused as a tool result", async () => {
    await expectFloorRefusedToModel({ project, cotal, requests: mains }, "push it", "The push was refused.", "git push --force*");
  }, 300_000);

  it("a JSON schema is refused before anything is sent, naming why", () => expectSchemaRefusedUnsent({ project, cotal, requests: mains }), 120_000);

  it("cotal status names the OpenCode configuration (the user's file, model, key variable), never the key; the key is in no argv or log", () =>
    expectStatusNamesConfigNotKey(
      { project, cotal },
      "opencode",
      `config ${join(project, "home", ".config", "opencode", "opencode.json")} (model anthropic/claude-double); keys from ${KEY_VAR}`,
      KEY,
    ));
});

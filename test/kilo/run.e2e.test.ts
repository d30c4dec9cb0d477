// `cotal run` with a Kilo Code persona, through the shipped CLI only: `cotal up -d` in a fresh
// folder from a shell whose own ~/.config/kilo/kilo.json names the Anthropic Messages double as its
// provider's base URL and reads the key from a variable ({env:…}), as a Kilo user's would. The run
// returns ok with the model's output, Kilo's cost estimate, token usage and session id; the persona
// reached the model as instructions; the key went through the environment only. A bash call the
// deny floor covers is refused by the real CLI; a JSON schema, which `kilo run` cannot hold to, is
// refused before anything is sent. The user's Kilo folder is left as it was.
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findNatsServer } from "../../broker/index.js";
import type { RunReply } from "../../schemas/index.js";
import { buildCli, cleanEnv, freePort, runCotal, exitedOk } from "../harness/cli.js";
import { writeKiloConfig } from "../harness/runtime-shell.js";
import { allText, lastUserText, ModelDouble, systemText } from "../../testbed/model-double.js";
import { expectFloorRefusedToModel, expectSchemaRefusedUnsent, expectStatusNamesConfigNotKey } from "../harness/run-cases.js";

const KEY_VAR = "DOUBLE_KILO_KEY";
const KEY = "sk-kilo-double-secret-0123456789";

let project: string;
let model: ModelDouble;
let shell: NodeJS.ProcessEnv;
let userConfig: string;
let userConfigText: string;

const cotal = (args: string[]) => runCotal(args, { cwd: project, env: shell, timeoutMs: 300_000 });
const ok = exitedOk;
const mains = (marker: string) => model.mainRequests.filter((r) => lastUserText(r).includes(marker) || allText(r).includes(marker));

beforeAll(async () => {
  await buildCli();
  project = mkdtempSync(join(tmpdir(), "cotal-kilo-run-"));
  model = await ModelDouble.start([
    { when: (r) => lastUserText(r).includes("RUN-KILO"), reply: ["kilo says hi"] },
    { when: (r) => lastUserText(r).includes("RUN-FLOOR"), reply: [{ tool: "bash", input: { command: "git push --force origin main", description: "push" } }] },
    { afterToolResult: "bash", reply: ["The push was refused."] },
  ]);
  const home = join(project, "home");
  userConfig = writeKiloConfig(home, model.url, KEY_VAR);
  userConfigText = readFileSync(userConfig, "utf8");
  mkdirSync(join(project, ".cotal", "agents"), { recursive: true });
  writeFileSync(join(project, ".cotal", "agents", "coder.md"), ["---", "name: coder", "runtime: kilo", "---", "You are CODER-PERSONA, terse.", ""].join("\n"));
  shell = cleanEnv({
    HOME: home,
    NATS_SERVER_BIN: findNatsServer(),
    KILO_DISABLE_MODELS_FETCH: "1",
    KILO_TELEMETRY_LEVEL: "off",
    [KEY_VAR]: KEY,
    COTAL_SPACE: `kilorun-${process.pid}`,
  });
  ok(await cotal(["up", "-d", "--port", String(await freePort())]));
}, 180_000);

afterAll(async () => {
  if (project) await cotal(["down"]).catch(() => undefined);
  await model?.close();
  if (project) await rm(project, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
});

describe("cotal run with a Kilo Code persona, through the shipped CLI", () => {
  it("returns ok with the model's output, Kilo's cost estimate and token usage, using the user's own Kilo provider", async () => {
    const r = await cotal(["run", "coder", "--prompt", "RUN-KILO say hi", "--json"]);
    const result = r.json<RunReply>().results[0];
    expect(result, `${r.stdout}\n${r.stderr}`).toMatchObject({
      status: "ok",
      output: "kilo says hi",
      persona: "coder",
      costUsd: 0,
      costBasis: "client-estimate",
    });
    expect(r.code).toBe(0);
    expect(result!.sessionId).toMatch(/^ses_/);
    expect(result!.usage?.input_tokens).toBeGreaterThan(0);
    const turn = mains("RUN-KILO")[0]!;
    // The persona reached the model as instructions, the key as the provider's key (from {env:…}).
    expect(systemText(turn)).toContain("CODER-PERSONA");
    expect(turn.headers["x-api-key"]).toBe(KEY);
    // Kilo read a copy of the user's config: their file is as they wrote it (no `$schema` added).
    expect(readFileSync(userConfig, "utf8")).toBe(userConfigText);
  }, 300_000);

  it("the deny floor holds in the real CLI: the model's `git push --force` is refused as a tool result", async () => {
    await expectFloorRefusedToModel({ project, cotal, requests: mains }, "push it", "The push was refused.", "git push --force*");
  }, 300_000);

  it("a JSON schema is refused before anything is sent, naming why", () => expectSchemaRefusedUnsent({ project, cotal, requests: mains }), 120_000);

  it("cotal status names the Kilo configuration (the user's file, model, key variable), never the key; the key is in no argv or log", async () => {
    await expectStatusNamesConfigNotKey({ project, cotal }, "kilo", `config ${userConfig} (model anthropic/claude-double); keys from ${KEY_VAR}`, KEY);
    expect(readFileSync(userConfig, "utf8")).toBe(userConfigText);
  });
});

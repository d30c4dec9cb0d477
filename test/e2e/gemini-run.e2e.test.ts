// `cotal run` with a Gemini CLI persona, through the shipped CLI only: `cotal up -d` in
// a fresh folder from a shell whose own ~/.gemini/settings.json selects API-key auth, with
// GEMINI_API_KEY and GOOGLE_GEMINI_BASE_URL (the Gemini API double) in the environment, as a
// Gemini user's would. The run returns ok with the model's output, token usage (costBasis usage)
// and the session id; the persona reached the model as context; the key went through the
// environment only. The deny floor holds in the real CLI (its policy engine refuses a `git push
// --force` the model asks for, while an allowed shell command runs); a JSON schema, which the CLI
// cannot hold to, is refused before anything is sent.
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findNatsServer } from "../../broker/index.js";
import type { RunReply } from "../../schemas/index.js";
import { contentTexts, functionResponses, GeminiDouble, type RecordedGeminiRequest } from "../../testbed/gemini-double.js";
import { buildCli, cleanEnv, freePort, runCotal, exitedOk } from "../harness/cli.js";
import { expectSchemaRefusedUnsent, expectStatusNamesConfigNotKey } from "../harness/run-cases.js";

const KEY = "gemini-double-secret-0123456789";
const SHELL = "run_shell_command";

let project: string;
let double: GeminiDouble;
let shell: NodeJS.ProcessEnv;

const cotal = (args: string[]) => runCotal(args, { cwd: project, env: shell, timeoutMs: 300_000 });
const ok = exitedOk;
const has = (r: RecordedGeminiRequest, marker: string): boolean => contentTexts(r).some((t) => t.includes(marker));
const turns = (marker: string) => double.turns().filter((r) => has(r, marker));
const responses = (marker: string) => turns(marker).flatMap((r) => functionResponses(r));

beforeAll(async () => {
  await buildCli();
  project = mkdtempSync(join(tmpdir(), "cotal-gemini-run-"));
  double = await GeminiDouble.start();
  double.push(
    { when: (r) => has(r, "RUN-GEMINI") && !functionResponses(r).length, reply: ["gemini says hi"] },
    { when: (r) => has(r, "RUN-FLOOR") && !functionResponses(r).length, reply: [{ tool: SHELL, args: { command: "git push --force origin main" } }] },
    { when: (r) => has(r, "RUN-FLOOR") && functionResponses(r).length === 1, reply: [{ tool: SHELL, args: { command: "echo floor-let-this-run" } }] },
    { when: (r) => has(r, "RUN-FLOOR") && functionResponses(r).length === 2, reply: ["The push was refused."] },
  );
  const home = join(project, "home");
  mkdirSync(join(home, ".gemini"), { recursive: true });
  writeFileSync(join(home, ".gemini", "settings.json"), JSON.stringify({ security: { auth: { selectedType: "gemini-api-key" } } }));
  mkdirSync(join(project, ".cotal", "agents"), { recursive: true });
  writeFileSync(
    join(project, ".cotal", "agents", "coder.md"),
    ["---", "name: coder", "runtime: gemini", "allowedTools: [Bash]", "---", "You are CODER-PERSONA, terse.", ""].join("\n"),
  );
  shell = cleanEnv({
    HOME: home,
    NATS_SERVER_BIN: findNatsServer(),
    GEMINI_API_KEY: KEY,
    GOOGLE_GEMINI_BASE_URL: double.baseUrl,
    COTAL_SPACE: `gmrun-${process.pid}`,
  });
  ok(await cotal(["up", "-d", "--port", String(await freePort())]));
}, 180_000);

afterAll(async () => {
  if (project) await cotal(["down"]).catch(() => undefined);
  await double?.close();
  if (project) await rm(project, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
});

describe("cotal run with a Gemini CLI persona, through the shipped CLI", () => {
  it("returns ok with the model's output, token usage and the session id, using the user's own Gemini auth", async () => {
    const r = await cotal(["run", "coder", "--prompt", "RUN-GEMINI say hi", "--json"]);
    const result = r.json<RunReply>().results[0];
    expect(result, `${r.stdout}\n${r.stderr}`).toMatchObject({ status: "ok", output: "gemini says hi", persona: "coder", costUsd: 0, costBasis: "usage" });
    expect(r.code).toBe(0);
    expect(result!.sessionId).toMatch(/^[0-9a-f-]{36}$/);
    expect(result!.usage?.input_tokens).toBeGreaterThan(0);
    const turn = turns("RUN-GEMINI")[0]!;
    // The persona reached the model (as Gemini's global context), the key as the API key header.
    expect(JSON.stringify(turn.body)).toContain("CODER-PERSONA");
    expect(turn.headers["x-goog-api-key"]).toBe(KEY);
  }, 300_000);

  it("the deny floor holds in the real CLI: `git push --force` is refused by its policy, an allowed command runs", async () => {
    const r = await cotal(["run", "coder", "--prompt", "RUN-FLOOR push it", "--json"]);
    expect(r.json<RunReply>().results[0], `${r.stdout}\n${r.stderr}`).toMatchObject({ status: "ok", output: "The push was refused." });
    const [refused, ran] = [...new Map(responses("RUN-FLOOR").map((x) => [JSON.stringify(x), x])).values()];
    expect(JSON.stringify(refused)).toContain("Cotal's deny floor refuses this command");
    expect(JSON.stringify(ran)).toContain("floor-let-this-run");
    expect(JSON.stringify(ran)).not.toContain("denied");
  }, 300_000);

  it("a JSON schema is refused before anything is sent, naming why", () => expectSchemaRefusedUnsent({ project, cotal, requests: turns }), 120_000);

  it("cotal status names the Gemini configuration (settings, auth type, variables), never the key; the key is in no argv or log", () =>
    expectStatusNamesConfigNotKey(
      { project, cotal },
      "gemini",
      `settings ${join(project, "home", ".gemini", "settings.json")}; auth gemini-api-key; variables GEMINI_API_KEY, GOOGLE_GEMINI_BASE_URL`,
      KEY,
    ));
});

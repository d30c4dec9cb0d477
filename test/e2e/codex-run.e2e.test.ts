// `cotal run` with a Codex persona, through the shipped CLI only:
// `cotal up -d` in a fresh folder from a shell whose own ~/.codex/config.toml names a provider
// (the Responses-API double) and the variable its key is read from, as a Codex user's would. The
// run returns ok with the model's output, its token usage (costBasis `usage`: Codex reports tokens,
// not dollars) and its thread id; the persona reached the model as instructions, the prompt as
// input; the key went through the environment only (no argv, no log). The double is served from
// this process: every CLI call is async.
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunReply } from "../../schemas/index.js";
import type { CliResult } from "../harness/cli.js";
import { CODEX_KEY_VAR, CodexPath } from "../harness/codex-path.js";
import { inputTexts, type ResponsesDouble } from "../../testbed/responses-double.js";

const KEY_VAR = CODEX_KEY_VAR;
const KEY = "sk-codex-double-secret-0123456789";

let u: CodexPath;
let project: string;
let double: ResponsesDouble;

const cotal = (args: string[]) => u.cotal(args);

function ok(r: CliResult): CliResult {
  expect(r.code, `exit code; stdout: ${r.stdout}\nstderr: ${r.stderr}`).toBe(0);
  return r;
}

beforeAll(async () => {
  u = await CodexPath.start({ prefix: "cotal-codex-run-", key: KEY, double: { usage: { input_tokens: 321, output_tokens: 12 } } });
  ({ project, double } = u);
  mkdirSync(join(project, ".cotal", "agents"), { recursive: true });
  writeFileSync(join(project, ".cotal", "agents", "coder.md"), ["---", "name: coder", "runtime: codex", "---", "You are CODER-PERSONA, terse.", ""].join("\n"));
}, 120_000);

afterAll(async () => {
  await u?.close();
});

describe("cotal run with a Codex persona, through the shipped CLI", () => {
  it("returns ok with the model's output and token usage (costBasis usage), using the user's own Codex provider", async () => {
    double.push({ when: (r) => inputTexts(r).some((t) => t.includes("RUN-CODEX")), reply: ["codex says hi"] });
    const r = await cotal(["run", "coder", "--prompt", "RUN-CODEX say hi", "--json"]);
    const result = r.json<RunReply>().results[0];
    expect(result, `${r.stdout}\n${r.stderr}`).toMatchObject({
      status: "ok",
      output: "codex says hi",
      persona: "coder",
      costUsd: 0,
      costBasis: "usage",
      usage: { input_tokens: 321, output_tokens: 12 },
    });
    expect(r.code).toBe(0);
    expect(result!.sessionId).toMatch(/^[0-9a-f-]{36}$/);
    const turn = double.turns().find((q) => inputTexts(q).some((t) => t.includes("RUN-CODEX")))!;
    // The persona reached the model as instructions (Codex's developer_instructions), the key as the provider's bearer.
    expect(JSON.stringify(turn.body?.input)).toContain("CODER-PERSONA");
    expect(turn.headers.authorization).toBe(`Bearer ${KEY}`);
  }, 120_000);

  it("cotal status says which Codex configuration seats and runs use (the user's config, provider, model, key variable), never the key", async () => {
    const status = ok(await cotal(["status"]));
    expect(status.stdout).toContain(
      `codex config: config ${join(project, "home", ".codex", "config.toml")} (provider double, model gpt-double); keys from ${KEY_VAR}`,
    );
    expect(status.stdout).not.toContain(KEY);
  });

  it("the provider key is in no argv and no log: it reaches the manager through its environment only", () => {
    const pid = JSON.parse(readFileSync(join(project, ".cotal", "run", "manager.json"), "utf8")).pid as number;
    expect(readFileSync(`/proc/${pid}/cmdline`, "utf8")).not.toContain(KEY);
    expect(readFileSync(`/proc/${pid}/environ`, "utf8").split("\0")).toContain(`${KEY_VAR}=${KEY}`);
    for (const log of readdirSync(join(project, ".cotal", "logs"))) expect(readFileSync(join(project, ".cotal", "logs", log), "utf8"), log).not.toContain(KEY);
  });
});

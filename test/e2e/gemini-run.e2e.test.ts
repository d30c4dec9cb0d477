// `cotal run` with a Gemini CLI persona, through the shipped CLI only: `cotal up -d` in
// a fresh folder from a shell whose own ~/.gemini/settings.json selects API-key auth, with
// GEMINI_API_KEY and GOOGLE_GEMINI_BASE_URL (the Gemini API double) in the environment, as a
// Gemini user's would. The run returns ok with the model's output, token usage (costBasis usage)
// and the session id; the persona reached the model as context; the key went through the
// environment only. The deny floor holds in the real CLI (its policy engine refuses a `git push
// --force` the model asks for, while an allowed shell command runs); a JSON schema, which the CLI
// cannot hold to, is refused before anything is sent.
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { RunReply } from "../../schemas/index.js";
import { contentTexts, functionResponses, GeminiDouble, type RecordedGeminiRequest } from "../../testbed/gemini-double.js";
import { runtimeMesh } from "../harness/runtime-mesh.js";
import { writeGeminiSettings } from "../harness/runtime-shell.js";
import { CODER_PERSONA, coderAgent, expectRunOk, expectSchemaRefusedUnsent, expectStatusNamesConfigNotKey } from "../harness/run-cases.js";

const KEY = "gemini-double-secret-0123456789";
const SHELL = "run_shell_command";

const has = (r: RecordedGeminiRequest, marker: string): boolean => contentTexts(r).some((t) => t.includes(marker));

const mesh = runtimeMesh({
  name: "gemini-run",
  space: "gmrun",
  timeoutMs: 300_000,
  agents: coderAgent("gemini", ["Bash"]),
  double: async () => {
    const double = await GeminiDouble.start();
    double.push(
      { when: (r) => has(r, "RUN-GEMINI") && !functionResponses(r).length, reply: ["gemini says hi"] },
      { when: (r) => has(r, "RUN-FLOOR") && !functionResponses(r).length, reply: [{ tool: SHELL, args: { command: "git push --force origin main" } }] },
      { when: (r) => has(r, "RUN-FLOOR") && functionResponses(r).length === 1, reply: [{ tool: SHELL, args: { command: "echo floor-let-this-run" } }] },
      { when: (r) => has(r, "RUN-FLOOR") && functionResponses(r).length === 2, reply: ["The push was refused."] },
    );
    return double;
  },
  shell: (home, double) => {
    writeGeminiSettings(home);
    return { GEMINI_API_KEY: KEY, GOOGLE_GEMINI_BASE_URL: double.baseUrl };
  },
});
const { cotal } = mesh;
const turns = (marker: string) => mesh.model.turns().filter((r) => has(r, marker));
const responses = (marker: string) => turns(marker).flatMap((r) => functionResponses(r));
/** What the shared run cases read: the project, its `cotal`, the model turns that carry a marker. */
const parts = () => ({ project: mesh.project, cotal, requests: turns });

describe("cotal run with a Gemini CLI persona, through the shipped CLI", () => {
  it("returns ok with the model's output, token usage and the session id, using the user's own Gemini auth", async () => {
    const result = await expectRunOk(cotal, "RUN-GEMINI say hi", { output: "gemini says hi", costBasis: "usage", sessionId: /^[0-9a-f-]{36}$/ });
    expect(result.usage?.input_tokens).toBeGreaterThan(0);
    const turn = turns("RUN-GEMINI")[0]!;
    // The persona reached the model (as Gemini's global context), the key as the API key header.
    expect(JSON.stringify(turn.body)).toContain(CODER_PERSONA);
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

  it("a JSON schema is refused before anything is sent, naming why", () => expectSchemaRefusedUnsent(parts()), 120_000);

  it("cotal status names the Gemini configuration (settings, auth type, variables), never the key; the key is in no argv or log", () =>
    expectStatusNamesConfigNotKey(
      parts(),
      "gemini",
      `settings ${join(mesh.home, ".gemini", "settings.json")}; auth gemini-api-key; variables GEMINI_API_KEY, GOOGLE_GEMINI_BASE_URL`,
      KEY,
    ));
});

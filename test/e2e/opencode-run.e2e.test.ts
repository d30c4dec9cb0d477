// `cotal run` with an OpenCode persona, through the shipped CLI only: `cotal up -d` in a
// fresh folder from a shell whose own ~/.config/opencode/opencode.json names the Anthropic
// Messages double as its provider's base URL and reads the key from a variable ({env:…}), as an
// OpenCode user's would. The run returns ok with the model's output, OpenCode's cost estimate and
// token usage and its session id; the persona reached the model as instructions; the key went
// through the environment only. A bash call the deny floor covers is refused by the real CLI; a
// JSON schema, which `opencode run` cannot hold to, is refused before anything is sent.
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { writeOpencodeConfig } from "../harness/runtime-shell.js";
import { runtimeMesh } from "../harness/runtime-mesh.js";
import { lastUserText, ModelDouble, systemText } from "../../testbed/model-double.js";
import {
  CODER_PERSONA,
  coderAgent,
  expectFloorRefusedToModel,
  expectRunOk,
  expectSchemaRefusedUnsent,
  expectStatusNamesConfigNotKey,
  runSteps,
} from "../harness/run-cases.js";

const KEY_VAR = "DOUBLE_OPENCODE_KEY";
const KEY = "sk-opencode-double-secret-0123456789";
const REFUSED = "The push was refused.";

const mesh = runtimeMesh({
  name: "opencode-run",
  space: "ocrun",
  timeoutMs: 300_000,
  agents: coderAgent("opencode"),
  double: () =>
    ModelDouble.start(
      runSteps({
        shown: (r, marker) => lastUserText(r).includes(marker),
        marker: "RUN-OPENCODE",
        output: "opencode says hi",
        floorInput: { command: "git push --force origin main", description: "push" },
        refused: REFUSED,
      }),
    ),
  shell: (home, model) => {
    // The key read from a variable of the user's shell ({env:…}), not written in their config.
    writeOpencodeConfig(home, model.url, {}, `{env:${KEY_VAR}}`);
    return { OPENCODE_DISABLE_MODELS_FETCH: "1", [KEY_VAR]: KEY };
  },
});
const { cotal } = mesh;
const mains = (marker: string) =>
  mesh.model.mainRequests.filter((r) => lastUserText(r).includes(marker) || JSON.stringify(r.body?.messages ?? []).includes(marker));
/** What the shared run cases read: the project, its `cotal`, the model turns that carry a marker. */
const parts = () => ({ project: mesh.project, cotal, requests: mains });

describe("cotal run with an OpenCode persona, through the shipped CLI", () => {
  it("returns ok with the model's output, OpenCode's cost estimate and token usage, using the user's own OpenCode provider", async () => {
    const result = await expectRunOk(cotal, "RUN-OPENCODE say hi", { output: "opencode says hi", costBasis: "client-estimate", sessionId: /^ses_/ });
    expect(result.usage?.input_tokens).toBeGreaterThan(0);
    const turn = mains("RUN-OPENCODE")[0]!;
    // The persona reached the model as instructions, the key as the provider's key (from {env:…}).
    expect(systemText(turn)).toContain(CODER_PERSONA);
    expect(turn.headers["x-api-key"]).toBe(KEY);
  }, 300_000);

  it("the deny floor holds in the real CLI: the model's `git push --force` is refused as a tool result", async () => {
    await expectFloorRefusedToModel(parts(), "push it", REFUSED, "git push --force*");
  }, 300_000);

  it("a JSON schema is refused before anything is sent, naming why", () => expectSchemaRefusedUnsent(parts()), 120_000);

  it("cotal status names the OpenCode configuration (the user's file, model, key variable), never the key; the key is in no argv or log", () =>
    expectStatusNamesConfigNotKey(
      parts(),
      "opencode",
      `config ${join(mesh.home, ".config", "opencode", "opencode.json")} (model anthropic/claude-double); keys from ${KEY_VAR}`,
      KEY,
    ));
});

// `cotal run` with a Kilo Code persona, through the shipped CLI only: `cotal up -d` in a fresh
// folder from a shell whose own ~/.config/kilo/kilo.json names the Anthropic Messages double as its
// provider's base URL and reads the key from a variable ({env:…}), as a Kilo user's would. The run
// returns ok with the model's output, Kilo's cost estimate, token usage and session id; the persona
// reached the model as instructions; the key went through the environment only. A bash call the
// deny floor covers is refused by the real CLI; a JSON schema, which `kilo run` cannot hold to, is
// refused before anything is sent. The user's Kilo folder is left as it was.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { writeKiloConfig } from "../harness/runtime-shell.js";
import { runtimeMesh } from "../harness/runtime-mesh.js";
import { allText, lastUserText, ModelDouble, systemText } from "../../testbed/model-double.js";
import {
  CODER_PERSONA,
  coderAgent,
  expectFloorRefusedToModel,
  expectRunOk,
  expectSchemaRefusedUnsent,
  expectStatusNamesConfigNotKey,
  runSteps,
} from "../harness/run-cases.js";

const KEY_VAR = "DOUBLE_KILO_KEY";
const KEY = "sk-kilo-double-secret-0123456789";
const REFUSED = "The push was refused.";

let userConfig: string;
let userConfigText: string;

const mesh = runtimeMesh({
  name: "kilo-run",
  space: "kilorun",
  timeoutMs: 300_000,
  agents: coderAgent("kilo"),
  double: () =>
    ModelDouble.start(
      runSteps({
        shown: (r, marker) => lastUserText(r).includes(marker),
        marker: "RUN-KILO",
        output: "kilo says hi",
        floorInput: { command: "git push --force origin main", description: "push" },
        refused: REFUSED,
      }),
    ),
  shell: (home, model) => {
    userConfig = writeKiloConfig(home, model.url, KEY_VAR);
    userConfigText = readFileSync(userConfig, "utf8");
    return { KILO_DISABLE_MODELS_FETCH: "1", KILO_TELEMETRY_LEVEL: "off", [KEY_VAR]: KEY };
  },
});
const { cotal } = mesh;
const mains = (marker: string) => mesh.model.mainRequests.filter((r) => lastUserText(r).includes(marker) || allText(r).includes(marker));
/** What the shared run cases read: the project, its `cotal`, the model turns that carry a marker. */
const parts = () => ({ project: mesh.project, cotal, requests: mains });

describe("cotal run with a Kilo Code persona, through the shipped CLI", () => {
  it("returns ok with the model's output, Kilo's cost estimate and token usage, using the user's own Kilo provider", async () => {
    const result = await expectRunOk(cotal, "RUN-KILO say hi", { output: "kilo says hi", costBasis: "client-estimate", sessionId: /^ses_/ });
    expect(result.usage?.input_tokens).toBeGreaterThan(0);
    const turn = mains("RUN-KILO")[0]!;
    // The persona reached the model as instructions, the key as the provider's key (from {env:…}).
    expect(systemText(turn)).toContain(CODER_PERSONA);
    expect(turn.headers["x-api-key"]).toBe(KEY);
    // Kilo read a copy of the user's config: their file is as they wrote it (no `$schema` added).
    expect(readFileSync(userConfig, "utf8")).toBe(userConfigText);
  }, 300_000);

  it("the deny floor holds in the real CLI: the model's `git push --force` is refused as a tool result", async () => {
    await expectFloorRefusedToModel(parts(), "push it", REFUSED, "git push --force*");
  }, 300_000);

  it("a JSON schema is refused before anything is sent, naming why", () => expectSchemaRefusedUnsent(parts()), 120_000);

  it("cotal status names the Kilo configuration (the user's file, model, key variable), never the key; the key is in no argv or log", async () => {
    await expectStatusNamesConfigNotKey(parts(), "kilo", `config ${userConfig} (model anthropic/claude-double); keys from ${KEY_VAR}`, KEY);
    expect(readFileSync(userConfig, "utf8")).toBe(userConfigText);
  });
});

// `cotal run` with a pi persona, through the shipped CLI only: `cotal up -d` in a fresh folder from
// a shell whose own ~/.pi/agent/models.json names the Anthropic Messages double as a provider (its
// key read from a variable) and whose settings.json picks it, as a pi user's would. The run returns
// ok with the model's output, pi's cost estimate, token usage and session id; the persona reached
// the model in its system prompt; the key went through the environment only. A bash call the deny
// floor covers is blocked by Cotal's extension in the real CLI; a JSON schema, which `pi -p` cannot
// hold to, is refused before anything is sent.
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { exitedOk } from "../harness/cli.js";
import { writePiConfig } from "../harness/runtime-shell.js";
import { runtimeMesh } from "../harness/runtime-mesh.js";
import { allText, ModelDouble, systemText } from "../../testbed/model-double.js";
import {
  CODER_PERSONA,
  coderAgent,
  expectFloorRefusedToModel,
  expectKeyNotInManagerArgv,
  expectRunOk,
  expectSchemaRefusedUnsent,
  runSteps,
} from "../harness/run-cases.js";

const KEY_VAR = "DOUBLE_PI_KEY";
const KEY = "sk-pi-double-secret-0123456789";
const REFUSED = "The command was refused.";

const mesh = runtimeMesh({
  name: "pi-run",
  space: "pirun",
  timeoutMs: 300_000,
  agents: coderAgent("pi"),
  double: () =>
    ModelDouble.start(
      runSteps({
        shown: (r, marker) => allText(r).includes(marker),
        marker: "RUN-PI",
        output: "pi says hi",
        floorInput: { command: "sudo rm -rf /tmp/x" },
        refused: REFUSED,
      }),
    ),
  shell: (home, model) => {
    writePiConfig(home, model.url, KEY_VAR);
    return { [KEY_VAR]: KEY };
  },
});
const { cotal } = mesh;
const ok = exitedOk;
const mains = (marker: string) => mesh.model.mainRequests.filter((r) => allText(r).includes(marker));
/** What the shared run cases read: the project, its `cotal`, the model turns that carry a marker. */
const parts = () => ({ project: mesh.project, cotal, requests: mains });

describe("cotal run with a pi persona, through the shipped CLI", () => {
  it("returns ok with the model's output, pi's cost estimate and token usage, using the user's own pi provider", async () => {
    const result = await expectRunOk(cotal, "RUN-PI say hi", { output: "pi says hi", costBasis: "client-estimate", sessionId: /^[0-9a-f-]{36}$/ });
    expect(result.usage?.input_tokens).toBeGreaterThan(0);
    const turn = mains("RUN-PI")[0]!;
    expect(systemText(turn)).toContain(CODER_PERSONA);
    expect(turn.headers["x-api-key"]).toBe(KEY);
    expectKeyNotInManagerArgv(mesh.project, KEY);
  }, 300_000);

  it("the deny floor holds in the real CLI: the model's `sudo rm -rf` is blocked and it is told so", async () => {
    await expectFloorRefusedToModel(parts(), "clean up", REFUSED, "Cotal's deny floor");
  }, 300_000);

  it("a JSON schema is refused before anything is sent, naming why", () => expectSchemaRefusedUnsent(parts()), 120_000);

  it("cotal status names pi's configuration (the user's models.json, default model, key variable), never the key", async () => {
    const status = ok(await cotal(["status"]));
    expect(status.stdout).toMatch(/pi config: +/);
    expect(status.stdout).toContain(`models ${join(mesh.home, ".pi", "agent", "models.json")}; default double/claude-double; keys from ${KEY_VAR}`);
    expect(status.stdout).not.toContain(KEY);
  });
});

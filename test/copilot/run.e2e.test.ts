// `cotal run` with a GitHub Copilot CLI persona, through the shipped CLI only: `cotal up -d` in a
// fresh folder from a shell that names a provider of the user's own (COPILOT_PROVIDER_* and
// COPILOT_MODEL: the Anthropic Messages double), as a Copilot user with their own key would. The
// run returns ok with the model's output and Copilot's session id; the persona reached the model
// as instructions; the key went through the environment only. With the shell allowed
// (allowedTools: Bash), a command the deny floor covers is still refused by Cotal's PreToolUse
// hook in the real CLI; a JSON schema, which Copilot cannot hold to, is refused before anything is sent.
import { describe, expect, it } from "vitest";
import { exitedOk } from "../harness/cli.js";
import { copilotShell } from "../harness/runtime-shell.js";
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

const KEY = "sk-copilot-double-secret-0123456789";
const REFUSED = "The reset was refused.";

const mesh = runtimeMesh({
  name: "copilot-run",
  space: "cprun",
  timeoutMs: 300_000,
  agents: coderAgent("copilot", ["Bash"]),
  double: () =>
    ModelDouble.start(
      runSteps({
        shown: (r, marker) => allText(r).includes(marker),
        marker: "RUN-COPILOT",
        output: "copilot says hi",
        floorInput: { command: "git reset --hard HEAD~3", description: "reset" },
        refused: REFUSED,
      }),
    ),
  shell: (_home, model) => copilotShell(model.url, KEY),
});
const { cotal } = mesh;
const ok = exitedOk;
const mains = (marker: string) => mesh.model.mainRequests.filter((r) => allText(r).includes(marker));
/** What the shared run cases read: the project, its `cotal`, the model turns that carry a marker. */
const parts = () => ({ project: mesh.project, cotal, requests: mains });

describe("cotal run with a GitHub Copilot CLI persona, through the shipped CLI", () => {
  it("returns ok with the model's output and session, using the user's own provider; the persona is an instruction", async () => {
    await expectRunOk(cotal, "RUN-COPILOT say hi", { output: "copilot says hi", costBasis: "usage", sessionId: /^[0-9a-f-]{36}$/ });
    const turn = mains("RUN-COPILOT")[0]!;
    expect(systemText(turn) + allText(turn)).toContain(CODER_PERSONA);
    expect(turn.headers["x-api-key"]).toBe(KEY);
    expectKeyNotInManagerArgv(mesh.project, KEY);
  }, 300_000);

  it("the deny floor holds with the shell allowed: the model's `git reset --hard` is refused by Cotal's hook and it is told which rule", async () => {
    await expectFloorRefusedToModel(parts(), "reset it", REFUSED, "git reset --hard*", false);
  }, 300_000);

  it("a JSON schema is refused before anything is sent, naming why", () => expectSchemaRefusedUnsent(parts()), 120_000);

  it("cotal status names Copilot's configuration (the provider variables by name), never the key", async () => {
    const status = ok(await cotal(["status"]));
    expect(status.stdout).toMatch(/copilot config: +no config\.json in .*; provider anthropic at COPILOT_PROVIDER_BASE_URL; model from COPILOT_MODEL/);
    expect(status.stdout).not.toContain(KEY);
  });
});

// A GitHub Copilot CLI seat on a mixed mesh, through the shipped CLI only: `cotal up -d` in a fresh
// folder from a shell that names a provider of the user's own (COPILOT_PROVIDER_* and
// COPILOT_MODEL: the Anthropic Messages double) and no GitHub login; an echo seat alice and a
// managed Copilot seat bob (`cotal spawn -d --agent copilot`). A DM to bob (sent as alice) wakes
// bob with nobody typing: the manager types its wake line into the real Copilot TUI, Cotal's
// UserPromptSubmit hook hands the DM to the model (it is in the Messages request), which answers
// alice with cotal-cotal_dm (the connector's MCP tool); echo alice answers, bob is woken again and
// his model sees the echo; his turn is on his event plane (read from Copilot's session events), without the
// mail. A shell command, which Copilot would ask a person about, is denied
// unattended (the model is told; no dialog stops the seat) and the next DM still wakes bob. ps
// names his posture; the user's Copilot home is left untouched.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { exitedOk } from "../harness/cli.js";
import { messagesTurns } from "../harness/model-turns.js";
import { copilotShell } from "../harness/runtime-shell.js";
import { runtimeMesh } from "../harness/runtime-mesh.js";
import { AFTER, dmAnswerSteps, expectAskRefusedThenWoken, expectDmAnsweredAndEchoed, expectTurnOnPlane, PING, WAKE } from "../harness/seat-cases.js";
import { allText, ModelDouble } from "../../testbed/model-double.js";

const DM_TOOL = "cotal-cotal_dm";
const ASK = "please run echo asked";
const KEY = "sk-copilot-double-secret-0123456789";

const mesh = runtimeMesh({
  name: "copilot-seat",
  space: "cpseat",
  timeoutMs: 240_000,
  double: () =>
    ModelDouble.start([
      // Copilot's hook hands the DM over beside the prompt the manager typed.
      ...dmAnswerSteps(DM_TOOL, (r) => allText(r).includes(WAKE)),
      { when: (r) => allText(r).includes(ASK), reply: [{ tool: "bash", input: { command: "echo asked", description: "asks" } }] },
      { afterToolResult: "bash", reply: ["The shell was refused."] },
      { when: (r) => allText(r).includes(AFTER), reply: ["Still here."] },
    ]),
  shell: (_home, model) => copilotShell(model.url, KEY),
});
const { cotal } = mesh;
const ok = exitedOk;

describe("a GitHub Copilot CLI seat on a mixed mesh, unattended, through the shipped CLI", () => {
  it("a DM wakes copilot bob, the hook hands it to his model, he answers echo alice with cotal_dm and sees her echo; ps names his posture", async () => {
    const dmTurn = await expectDmAnsweredAndEchoed(cotal, messagesTurns(mesh.model), { agent: "copilot", dmTool: DM_TOOL, waitMs: 240_000 });
    expect(allText(dmTurn)).toContain(WAKE);
    expect(dmTurn.headers["x-api-key"]).toBe(KEY);
    // His turn is on his event plane: a run that started and finished, the cotal_dm call by Copilot's name, no mail.
    await expectTurnOnPlane(cotal, DM_TOOL, PING);
    const ps = ok(await cotal(["ps"]));
    expect(ps.stdout).toMatch(/bob\s+copilot\s+joined\s.*asks denied, deny floor hook/);
    // The user's own Copilot home was never written.
    expect(existsSync(join(mesh.home, ".copilot"))).toBe(false);
  }, 1_200_000);

  it("a shell command Copilot would ask about is denied unattended; the model is told and the next DM still wakes bob", async () => {
    await expectAskRefusedThenWoken(cotal, messagesTurns(mesh.model), {
      ask: ASK,
      shellTool: "bash",
      endsTurn: false,
      // Copilot answers a denied call with its rule as the tool's result: the command never ran.
      refused: (t) => expect(t.text).toContain("denied due to the following rules: `shell`"),
    });
  }, 700_000);
});

// An OpenCode seat on a mixed mesh, through the shipped CLI only: `cotal up -d` in a
// fresh folder from a shell whose own ~/.config/opencode/opencode.json names the Anthropic
// Messages double as its provider's base URL; an echo seat alice and a managed OpenCode seat bob
// (`cotal spawn -d --agent opencode`). A DM to bob (sent as alice) wakes bob with nobody typing:
// the manager types its wake line into the real OpenCode TUI, Cotal's plugin hands the DM to the
// model (it is in the Messages request), which answers alice with cotal_dm (an MCP tool call);
// echo alice answers, bob is woken again and his model sees the echo. ps names bob's posture. The
// user's own config asks before any bash command: in the unattended seat that ask is a denial
// (the model is told so as the tool's result), and the next DM still wakes bob: nothing waits for
// a person.
import { describe, expect, it } from "vitest";
import { exitedOk } from "../harness/cli.js";
import { messagesTurns } from "../harness/model-turns.js";
import { writeOpencodeConfig } from "../harness/runtime-shell.js";
import { runtimeMesh } from "../harness/runtime-mesh.js";
import { AFTER, dmAnswerSteps, expectAskRefusedThenWoken, expectDmAnsweredAndEchoed, WAKE } from "../harness/seat-cases.js";
import { lastUserText, ModelDouble } from "../../testbed/model-double.js";

const DM_TOOL = "cotal_cotal_dm";
const ASK = "please run echo asked";

const mesh = runtimeMesh({
  name: "opencode-mesh",
  space: "ocmesh",
  timeoutMs: 240_000,
  double: () =>
    ModelDouble.start([
      // OpenCode's plugin hands the DM over in the prompt the manager typed.
      ...dmAnswerSteps(DM_TOOL, (r) => lastUserText(r).includes(WAKE)),
      // A bash command the user's own rules ask about: denied unattended, the model is told.
      { when: (r) => lastUserText(r).includes(ASK), reply: [{ tool: "bash", input: { command: "echo asked", description: "asks" } }] },
      { when: (r) => lastUserText(r).includes(AFTER), reply: ["Still here."] },
    ]),
  shell: (home, model) => {
    // The user is asked before any bash command (a rule of their own config).
    writeOpencodeConfig(home, model.url, { permission: { bash: "ask" } });
    return { OPENCODE_DISABLE_MODELS_FETCH: "1" };
  },
});
const { cotal } = mesh;
const ok = exitedOk;

describe("an OpenCode seat on a mixed mesh, unattended, through the shipped CLI", () => {
  it("a DM wakes opencode bob, the plugin hands it to his model, he answers echo alice with cotal_dm and sees her echo; ps names his posture", async () => {
    const dmTurn = await expectDmAnsweredAndEchoed(cotal, messagesTurns(mesh.model), { agent: "opencode", dmTool: DM_TOOL, waitMs: 240_000 });
    // Bob was woken by the manager typing into his terminal: nobody else typed.
    expect(lastUserText(dmTurn)).toContain(WAKE);
    const ps = ok(await cotal(["ps"]));
    expect(ps.stdout).toMatch(/bob\s+opencode\s+joined\s.*agent cotal: asks refused, deny floor \(no carry\)/);

    // An ask of the user's rules is refused unattended: the model is told, the seat does not wait on a dialog, the next DM wakes it.
    await expectAskRefusedThenWoken(cotal, messagesTurns(mesh.model), {
      ask: ASK,
      shellTool: "bash",
      endsTurn: true,
      // The refused command never ran: its only result is the refusal.
      refused: (t) => expect(t, t.text).toMatchObject({ isError: true, text: expect.stringContaining("prevents you from using this specific tool call") }),
    });
  }, 1_200_000);
});

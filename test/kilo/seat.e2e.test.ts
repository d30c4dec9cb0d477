// A Kilo Code seat on a mixed mesh, through the shipped CLI only: `cotal up -d` in a fresh folder
// from a shell whose own ~/.config/kilo/kilo.json names the Anthropic Messages double as its
// provider's base URL (its key read from a variable, `{env:…}`); an echo seat alice and a managed
// Kilo seat bob (`cotal spawn -d --agent kilo`). A DM to bob (sent as alice) wakes bob with nobody
// typing: the manager types its wake line into the real Kilo TUI, Cotal's plugin hands the DM to
// the model (it is in the Messages request), which answers alice with cotal_dm (an MCP tool call);
// echo alice answers, bob is woken again and his model sees the echo. His turn is on his event
// plane; roster and ps name his runtime and posture. Kilo's own defaults ask before most shell
// commands: in the unattended seat that ask is refused at once (the model is told), and the next
// DM still wakes bob. The user's Kilo folder is left as it was (Kilo writes `$schema` into a config
// file it reads: the seat read a copy).
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { exitedOk } from "../harness/cli.js";
import { messagesTurns } from "../harness/model-turns.js";
import { writeKiloConfig } from "../harness/runtime-shell.js";
import { runtimeMesh } from "../harness/runtime-mesh.js";
import { AFTER, dmAnswerSteps, expectAskRefusedThenWoken, expectDmAnsweredAndEchoed, expectTurnOnPlane, PING, WAKE } from "../harness/seat-cases.js";
import { lastUserText, ModelDouble } from "../../testbed/model-double.js";

const DM_TOOL = "cotal_cotal_dm";
const ASK = "please commit your work";
const KEY_VAR = "DOUBLE_KILO_KEY";
const KEY = "sk-kilo-double-secret-0123456789";

const mesh = runtimeMesh({
  name: "kilo-seat",
  space: "kiloseat",
  timeoutMs: 240_000,
  double: () =>
    ModelDouble.start([
      // Kilo's plugin hands the DM over in the prompt the manager typed.
      ...dmAnswerSteps(DM_TOOL, (r) => lastUserText(r).includes(WAKE)),
      // A shell command Kilo's own defaults ask about: refused unattended, the turn ends.
      { when: (r) => lastUserText(r).includes(ASK), reply: [{ tool: "bash", input: { command: "git commit -m work", description: "commit" } }] },
      { when: (r) => lastUserText(r).includes(AFTER), reply: ["Still here."] },
    ]),
  shell: (home, model) => {
    writeKiloConfig(home, model.url, KEY_VAR);
    return { [KEY_VAR]: KEY, KILO_DISABLE_MODELS_FETCH: "1", KILO_TELEMETRY_LEVEL: "off" };
  },
});
const { cotal } = mesh;
const ok = exitedOk;

/** The user's Kilo config folder, file by file, as text (to prove it unchanged). */
function userKiloFolder(): Record<string, string> {
  const dir = join(mesh.home, ".config", "kilo");
  return Object.fromEntries(readdirSync(dir).map((f) => [f, readFileSync(join(dir, f), "utf8")]));
}

describe("a Kilo Code seat on a mixed mesh, unattended, through the shipped CLI", () => {
  it("a DM wakes kilo bob, the plugin hands it to his model, he answers echo alice with cotal_dm and sees her echo; his turn is on his plane", async () => {
    const before = userKiloFolder();
    const dmTurn = await expectDmAnsweredAndEchoed(cotal, messagesTurns(mesh.model), { agent: "kilo", dmTool: DM_TOOL, waitMs: 240_000 });
    // Bob was woken by the manager typing into his terminal: nobody else typed.
    expect(lastUserText(dmTurn)).toContain(WAKE);
    // The key went to the double from the user's variable, through their own config's {env:…}.
    expect(dmTurn.headers["x-api-key"]).toBe(KEY);
    // His turn is on his event plane, the cotal_dm call by Kilo's name for it.
    await expectTurnOnPlane(cotal, DM_TOOL, PING);

    const roster = ok(await cotal(["roster", "--json"])).json<Array<{ id: string; runtime?: string }>>();
    expect(roster.find((r) => r.id === "local.bob")).toMatchObject({ runtime: "kilo" });
    const ps = ok(await cotal(["ps"]));
    expect(ps.stdout).toMatch(/bob\s+kilo\s+joined\s.*agent cotal: asks refused, deny floor \(no carry\)/);
    expect(userKiloFolder()).toEqual(before);
  }, 1_200_000);

  it("a shell command Kilo asks about is refused unattended: the model is told, and the next DM still wakes bob", async () => {
    await expectAskRefusedThenWoken(cotal, messagesTurns(mesh.model), {
      ask: ASK,
      shellTool: "bash",
      endsTurn: true,
      // The refused command never ran: its only result is the refusal.
      refused: (t) => expect(t, t.text).toMatchObject({ isError: true, text: expect.stringContaining("rejected permission to use this specific tool call") }),
    });
  }, 700_000);
});

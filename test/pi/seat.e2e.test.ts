// A pi seat on a mixed mesh, through the shipped CLI only: `cotal up -d` in a fresh folder from a
// shell whose own ~/.pi/agent/models.json names the Anthropic Messages double as a provider (its
// key read from a variable, as pi's docs say) and whose settings.json picks it; an echo seat alice
// and a managed pi seat bob (`cotal spawn -d --agent pi`). A DM to bob (sent as alice) wakes bob
// with nobody typing: the manager types its wake line into the real pi TUI, Cotal's extension
// hands the DM to the model (it is in the Messages request), which answers alice with cotal_dm
// (a tool the extension registered from the connector's MCP server); echo alice answers, bob is
// woken again and his model sees the echo. His turn is on his event plane. A `git push --force`
// of his model is blocked by the deny floor before it runs; ps names his posture. The user's own
// pi folder is left as it was.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { exitedOk } from "../harness/cli.js";
import { messagesTurns } from "../harness/model-turns.js";
import { writePiConfig } from "../harness/runtime-shell.js";
import { runtimeMesh } from "../harness/runtime-mesh.js";
import { allText, lastUserText, ModelDouble, toolResults } from "../../testbed/model-double.js";
import { dmAnswerSteps, expectDmAnsweredAndEchoed, expectTurnOnPlane, PING, WAKE } from "../harness/seat-cases.js";
import { until } from "../../testbed/until.js";

const DM_TOOL = "cotal_dm";
const FLOOR = "please force-push main";
const KEY_VAR = "DOUBLE_PI_KEY";
const KEY = "sk-pi-double-secret-0123456789";

const mesh = runtimeMesh({
  name: "pi-seat",
  space: "piseat",
  timeoutMs: 240_000,
  double: () =>
    ModelDouble.start([
      // pi's extension hands the DM over beside the prompt the manager typed.
      ...dmAnswerSteps(DM_TOOL, (r) => allText(r).includes(WAKE)),
      // A command the deny floor covers: blocked before it runs, the model is told.
      {
        when: (r) => lastUserText(r).includes(FLOOR) || allText(r).includes(FLOOR),
        reply: [{ tool: "bash", input: { command: "git push --force origin main" } }],
      },
      { afterToolResult: "bash", reply: ["The push was refused."] },
    ]),
  shell: (home, model) => {
    writePiConfig(home, model.url, KEY_VAR);
    return { [KEY_VAR]: KEY };
  },
});
const { cotal } = mesh;
const ok = exitedOk;

/** The user's pi folder, file by file, as text (to prove it unchanged). */
function userPiFolder(): Record<string, string> {
  const dir = join(mesh.home, ".pi", "agent");
  return Object.fromEntries(readdirSync(dir).map((f) => [f, readFileSync(join(dir, f), "utf8")]));
}

describe("a pi seat on a mixed mesh, unattended, through the shipped CLI", () => {
  it("a DM wakes pi bob, the extension hands it to his model, he answers echo alice with cotal_dm and sees her echo; his turn is on his plane", async () => {
    const before = userPiFolder();
    const dmTurn = await expectDmAnsweredAndEchoed(cotal, messagesTurns(mesh.model), { agent: "pi", dmTool: DM_TOOL, waitMs: 180_000 });
    // Bob was woken by the manager typing into his terminal: nobody else typed.
    expect(allText(dmTurn)).toContain(WAKE);
    // The key went to the double from the user's variable, through pi's own models.json.
    expect(dmTurn.headers["x-api-key"]).toBe(KEY);

    // His turn is on his event plane: a run that started and finished, with the cotal_dm call by name.
    await expectTurnOnPlane(cotal, DM_TOOL, PING);

    const ps = ok(await cotal(["ps"]));
    expect(ps.stdout).toMatch(/bob\s+pi\s+joined\s.*extension: no asks, deny floor/);
    expect(userPiFolder()).toEqual(before);
  }, 900_000);

  it("the deny floor blocks his model's `git push --force` before it runs; the model is told which rule", async () => {
    ok(await cotal(["send", "dm", "bob", FLOOR, "--as", "alice", "--impersonate"]));
    await until(() => mesh.model.mainRequests.some((r) => toolResults(r).some((t) => t.name === "bash")), 240_000, "bob's bash call to return", 500);
    const refused = mesh.model.mainRequests.flatMap((r) => toolResults(r)).find((t) => t.name === "bash")!;
    expect(refused.isError, refused.text).toBe(true);
    expect(refused.text).toContain("git push --force*");
  }, 400_000);
});

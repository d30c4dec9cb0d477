// A Gemini CLI seat on a mixed mesh, through the shipped CLI only: `cotal up -d` in a
// fresh folder from a shell whose own ~/.gemini/settings.json selects API-key auth, with
// GEMINI_API_KEY and GOOGLE_GEMINI_BASE_URL (the Gemini API double) in the environment; an echo
// seat alice and a managed Gemini seat bob (`cotal spawn -d --agent gemini`). A DM to bob (sent as
// alice) wakes bob with nobody typing: the manager types its wake line into the real Gemini TUI,
// the connector's hook on Gemini's BeforeAgent event hands the DM to the model (it is in the
// request), which answers alice with the cotal MCP tool (`mcp_cotal_cotal_dm`); echo alice answers,
// bob is woken again and his model sees the echo. ps names bob's posture; his turns are on his event
// plane (from Gemini's session records: the tool call by name, never the mail or its arguments). The shell, which Gemini's
// defaults would ask a person about, is refused in the unattended seat (not even offered to the
// model; a call of it anyway is answered with an error, never run), and the next DM still wakes
// bob: nothing waits for a person.
import { describe, expect, it } from "vitest";
import { streamViolation } from "../../connector/internal.js";
import { contentTexts, functionResponses, GeminiDouble, offeredTools, type RecordedGeminiRequest } from "../../testbed/gemini-double.js";
import { exitedOk } from "../harness/cli.js";
import { geminiLastUserText as lastUser, geminiTurns } from "../harness/model-turns.js";
import { runtimeMesh } from "../harness/runtime-mesh.js";
import { writeGeminiSettings } from "../harness/runtime-shell.js";
import { AFTER, ANSWER, expectAskRefusedThenWoken, expectDmAnsweredAndEchoed, PING, WAKE } from "../harness/seat-cases.js";
import { seatFrames } from "../harness/seat-plane.js";
import { until } from "../../testbed/until.js";

const DM_TOOL = "mcp_cotal_cotal_dm";
const ASK = "please run echo asked";

const text = (r: RecordedGeminiRequest): string => contentTexts(r).join("\n");
const responded = (r: RecordedGeminiRequest, name: string): boolean => functionResponses(r).some((f) => f.name === name);

const mesh = runtimeMesh({
  name: "gemini-mesh",
  space: "gmmesh",
  timeoutMs: 240_000,
  double: async () => {
    const double = await GeminiDouble.start();
    double.push(
      // Bob's first woken turn: the hook handed alice's DM over; answer her through Cotal's MCP server.
      {
        when: (r) => text(r).includes(PING) && lastUser(r).includes(WAKE) && !responded(r, DM_TOOL),
        reply: [{ tool: DM_TOOL, args: { to: "alice", text: ANSWER } }],
      },
      { when: (r) => responded(r, DM_TOOL), reply: ["Answered alice."] },
      // Bob's second woken turn: alice's echo reached his model.
      { when: (r) => text(r).includes(`echo: ${ANSWER}`), reply: ["Alice echoed."] },
      // A shell command Gemini's defaults would ask a person about: refused unattended, the model is told.
      { when: (r) => lastUser(r).includes(ASK), reply: [{ tool: "run_shell_command", args: { command: "echo asked" } }] },
      { when: (r) => responded(r, "run_shell_command"), reply: ["Refused, fine."] },
      { when: (r) => lastUser(r).includes(AFTER), reply: ["Still here."] },
    );
    return double;
  },
  shell: (home, double) => {
    writeGeminiSettings(home);
    return { GEMINI_API_KEY: "gemini-double-key", GOOGLE_GEMINI_BASE_URL: double.baseUrl };
  },
});
const { cotal } = mesh;
const ok = exitedOk;

describe("a Gemini CLI seat on a mixed mesh, unattended, through the shipped CLI", () => {
  it("a DM wakes gemini bob, the hook hands it to his model, he answers echo alice with the cotal MCP tool and sees her echo; ps names his posture", async () => {
    const dmTurn = await expectDmAnsweredAndEchoed(cotal, geminiTurns(mesh.model), { agent: "gemini", dmTool: DM_TOOL, waitMs: 240_000 });
    // Bob was woken by the manager typing into his terminal: nobody else typed.
    expect(lastUser(dmTurn)).toContain(WAKE);
    const ps = ok(await cotal(["ps"]));
    expect(ps.stdout).toMatch(/bob\s+gemini\s+joined\s.*policy: asks refused, deny floor \(no failed-turn condition; no carry; runs: tokens, not dollars\)/);

    // Bob's turns on his event plane, from Gemini's session records: well formed, the tool call by name; neither the mail nor the call's arguments.
    const frames = () => seatFrames(cotal, "bob");
    await until(async () => (await frames()).some((f) => f.events.some((e) => e.type === "TOOL_CALL_START")), 60_000, "bob's tool call on his plane", 500);
    const got = await frames();
    expect(got.map((f) => f.seq)).toEqual(got.map((_, i) => i + 1));
    const events = got.flatMap((f) => f.events.map((e) => ({ ...e, runId: (e as { runId?: string }).runId ?? f.runId })));
    const detail = JSON.stringify(events, null, 1);
    expect(streamViolation(events), detail).toBeUndefined();
    expect(
      events.find((e) => e.type === "TOOL_CALL_START"),
      detail,
    ).toMatchObject({ toolCallName: DM_TOOL });
    expect(
      events.find((e) => e.type === "TEXT_MESSAGE_CONTENT"),
      detail,
    ).toMatchObject({ delta: expect.stringContaining(WAKE) });
    expect(detail).not.toContain(PING);
    expect(detail).not.toContain(ANSWER);
    const roster = ok(await cotal(["roster", "--json"])).json<Array<{ id: string; runtime?: string }>>();
    expect(roster.find((r) => r.id === "local.bob")).toMatchObject({ runtime: "gemini" });

    // What Gemini would ask a person about is refused unattended: the model is told, no dialog waits, the next DM wakes bob.
    await expectAskRefusedThenWoken(cotal, geminiTurns(mesh.model), {
      ask: ASK,
      shellTool: "run_shell_command",
      endsTurn: false,
      refused: (t) => expect(t.text).toMatch(/not found|denied by policy/),
    });
    // Gemini leaves a tool its policy denies outright out of what it offers the model; a call of it anyway never runs.
    expect(mesh.model.turns().some((r) => offeredTools(r).includes(DM_TOOL))).toBe(true);
    expect(mesh.model.turns().flatMap((r) => offeredTools(r))).not.toContain("run_shell_command");
  }, 1_200_000);
});

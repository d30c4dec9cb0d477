// Every runtime on one mesh, through the shipped CLI only: `cotal up -d` in
// a fresh folder from a shell that holds each CLI's own configuration — the Claude double's URL and
// key, a ~/.codex/config.toml naming the Responses double, a ~/.config/opencode/opencode.json naming
// the Messages double, a ~/.gemini/settings.json with API-key auth and the Gemini double's URL, a
// ~/.pi/agent/models.json naming the Messages double, Copilot's provider variables naming it too —
// and six managed seats: alice (Claude Code), bob (Codex), carol (OpenCode), dave (Gemini CLI), erin
// (pi), frank (GitHub Copilot CLI). One DM goes around the ring alice → bob → carol → dave → erin →
// frank → alice. Alice starts it from her opening prompt;
// every later hop reaches an idle seat that nobody types into: the manager wakes it, the runtime's
// own hook or plugin hands the DM to its model, and the model passes it on with Cotal's MCP tool.
// The doubles are served from this process: every CLI call is async.
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildCli, freePort, runCotal, exitedOk } from "../harness/cli.js";
import { allText, isMainLoopRequest, lastUserText, ModelDouble, type RecordedRequest, newTurnText } from "../../testbed/model-double.js";
import { closeRuntimes, runtimeShell } from "../harness/runtime-shell.js";
import { seatScreen } from "../harness/seat-screen.js";
import { until } from "../../testbed/until.js";
import { contentTexts, functionResponses, GeminiDouble, type RecordedGeminiRequest } from "../../testbed/gemini-double.js";
import { functionOutputs, inputTexts, ResponsesDouble, type RecordedResponsesRequest } from "../../testbed/responses-double.js";

const OPENING = "Start the ring: pass it to bob over Cotal.";
const WAKE = "You have new Cotal mail";
/** What each hop's sender writes; each text names its hop, so a model sees which one it was handed. */
const HOP = {
  toBob: "ring hop 1, alice to bob",
  toCarol: "ring hop 2, bob to carol",
  toDave: "ring hop 3, carol to dave",
  toErin: "ring hop 4, dave to erin",
  toFrank: "ring hop 5, erin to frank",
  toAlice: "ring hop 6, frank to alice",
};
/** Each runtime's name for Cotal's `cotal_dm` MCP tool. */
const CLAUDE_DM = "mcp__plugin_cotal_cotal__cotal_dm";
const OPENCODE_DM = "cotal_cotal_dm";
const GEMINI_DM = "mcp_cotal_cotal_dm";
const PI_DM = "cotal_dm";
const COPILOT_DM = "cotal-cotal_dm";

let project: string;
let messages: ModelDouble; // Claude Code's and OpenCode's (both speak Anthropic Messages)
// pi's and Copilot's: Anthropic Messages too, a double each (a double plays its script in order, and
// erin may be woken while carol's turn still runs).
let piMessages: ModelDouble;
let copilotMessages: ModelDouble;
let responses: ResponsesDouble; // Codex's
let gemini: GeminiDouble;
let shell: NodeJS.ProcessEnv;

const cotal = (args: string[], timeoutMs = 300_000) => runCotal(args, { cwd: project, env: shell, timeoutMs });
const ok = exitedOk;
const codexSees = (r: RecordedResponsesRequest, text: string): boolean => JSON.stringify(r.body?.input ?? []).includes(text);
const geminiText = (r: RecordedGeminiRequest): string => contentTexts(r).join("\n");
/** The last user turn of a Gemini request (the wake line and what the hook added to it). */
const geminiLastUser = (r: RecordedGeminiRequest): string => {
  const users = (r.body?.contents ?? []).filter((c) => c.role === "user" && (c.parts ?? []).some((p) => p.text !== undefined));
  return (users.at(-1)?.parts ?? []).map((p) => p.text ?? "").join("\n");
};
/** A woken turn of a Messages-API seat that was handed `text`. */
const wokenWith = (r: RecordedRequest, text: string): boolean => isMainLoopRequest(r) && allText(r).includes(text) && lastUserText(r).includes(WAKE);
/** The same, for a runtime that hands the mail over as a message of its own after the wake line (pi), or inside it (Copilot). */
const handedWith = (r: RecordedRequest, text: string): boolean => isMainLoopRequest(r) && allText(r).includes(text) && allText(r).includes(WAKE);

beforeAll(async () => {
  await buildCli();
  project = await mkdtemp(join(tmpdir(), "cotal-ring-"));
  messages = await ModelDouble.start([
    // Alice (Claude Code), her opening turn: the first hop.
    { when: (r) => newTurnText(r).includes(OPENING), reply: [{ tool: CLAUDE_DM, input: { to: "bob", text: HOP.toBob } }] },
    { afterToolResult: CLAUDE_DM, reply: ["Passed on."] },
    // Carol (OpenCode), woken with bob's hop: the third.
    { when: (r) => wokenWith(r, HOP.toCarol), reply: [{ tool: OPENCODE_DM, input: { to: "dave", text: HOP.toDave } }] },
    { afterToolResult: OPENCODE_DM, reply: ["Passed on."] },
    // Alice, woken with dave's hop: the ring is closed.
    { when: (r) => wokenWith(r, HOP.toAlice), reply: ["The ring is closed."] },
  ]);
  // Erin (pi), woken with dave's hop: the fifth.
  piMessages = await ModelDouble.start([
    { when: (r) => handedWith(r, HOP.toErin), reply: [{ tool: PI_DM, input: { to: "frank", text: HOP.toFrank } }] },
    { afterToolResult: PI_DM, reply: ["Passed on."] },
  ]);
  // Frank (GitHub Copilot CLI), woken with erin's hop: the sixth.
  copilotMessages = await ModelDouble.start([
    { when: (r) => handedWith(r, HOP.toFrank), reply: [{ tool: COPILOT_DM, input: { to: "alice", text: HOP.toAlice } }] },
    { afterToolResult: COPILOT_DM, reply: ["Passed on."] },
  ]);
  responses = await ResponsesDouble.start();
  // Bob (Codex), woken with alice's hop: the second.
  responses.push(
    {
      when: (r) => codexSees(r, HOP.toBob) && functionOutputs(r).length === 0,
      reply: [{ namespace: "mcp__cotal", tool: "cotal_dm", arguments: { to: "carol", text: HOP.toCarol } }],
    },
    { when: (r) => functionOutputs(r).length > 0, reply: ["Passed on."] },
  );
  gemini = await GeminiDouble.start();
  // Dave (Gemini CLI), woken with carol's hop: the fourth.
  gemini.push(
    {
      when: (r) => geminiText(r).includes(HOP.toDave) && geminiLastUser(r).includes(WAKE) && !functionResponses(r).some((f) => f.name === GEMINI_DM),
      reply: [{ tool: GEMINI_DM, args: { to: "erin", text: HOP.toErin } }],
    },
    { when: (r) => functionResponses(r).some((f) => f.name === GEMINI_DM), reply: ["Passed on."] },
  );

  shell = runtimeShell(project, { messages, responses, gemini, pi: piMessages, copilot: copilotMessages }, `ring-${process.pid}`);
  ok(await cotal(["up", "-d", "--port", String(await freePort())]));
}, 180_000);

afterAll(() => closeRuntimes(project, () => cotal(["down"]), { messages, responses, gemini, pi: piMessages, copilot: copilotMessages }));

describe("every runtime on one mesh, unattended, through the shipped CLI", () => {
  it("one DM goes around the ring claude → codex → opencode → gemini → pi → copilot → claude, every later hop woken by the manager", async () => {
    for (const [name, agent] of [
      ["bob", "codex"],
      ["carol", "opencode"],
      ["dave", "gemini"],
      ["erin", "pi"],
      ["frank", "copilot"],
    ] as const) {
      const seat = ok(await cotal(["spawn", "-d", "--agent", agent, "--name", name, "--wait-ms", "240000", "--json"]));
      expect(seat.json(), seat.stdout).toMatchObject({ name, outcome: "started", seat: { state: "joined" } });
    }
    const alice = ok(await cotal(["spawn", "-d", "--agent", "claude", "--name", "alice", "--prompt", OPENING, "--wait-ms", "240000", "--json"]));
    expect(alice.json(), alice.stdout).toMatchObject({ name: "alice", outcome: "started" });

    const bobWoken = () => responses.turns().find((r) => codexSees(r, HOP.toBob) && functionOutputs(r).length === 0);
    const carolWoken = () => messages.requests.find((r) => wokenWith(r, HOP.toCarol));
    const daveWoken = () => gemini.turns().find((r) => geminiText(r).includes(HOP.toDave) && geminiLastUser(r).includes(WAKE));
    const erinWoken = () => piMessages.requests.find((r) => handedWith(r, HOP.toErin));
    const frankWoken = () => copilotMessages.requests.find((r) => handedWith(r, HOP.toFrank));
    const aliceWoken = () => messages.requests.find((r) => wokenWith(r, HOP.toAlice));
    try {
      await until(() => bobWoken() !== undefined, 300_000, "codex bob to be woken with alice's hop", 500);
      await until(() => carolWoken() !== undefined, 300_000, "opencode carol to be woken with bob's hop", 500);
      await until(() => daveWoken() !== undefined, 300_000, "gemini dave to be woken with carol's hop", 500);
      await until(() => erinWoken() !== undefined, 300_000, "pi erin to be woken with dave's hop", 500);
      await until(() => frankWoken() !== undefined, 300_000, "copilot frank to be woken with erin's hop", 500);
      await until(() => aliceWoken() !== undefined, 300_000, "claude alice to be woken with frank's hop", 500);
    } catch (err) {
      const codexTurns = responses
        .turns()
        .map((t) => inputTexts(t).join(" | ").slice(0, 300))
        .join("\n");
      // What Claude, OpenCode, pi and Copilot asked their double (alice's opening turn sends the first hop), and
      // the mesh's status (mail waiting per seat): whether a hop was never sent or never woke its receiver.
      const messageTurns = [messages, piMessages, copilotMessages].map((d) => d.requests.map((r) => lastUserText(r).slice(0, 200)).join("\n")).join("\n---\n");
      const status = (await cotal(["status"])).stdout;
      // Each seat's screen (the last 40 lines): a prompt left in an input box, or a dialog nobody expected.
      const screens = [];
      for (const name of ["alice", "bob", "carol", "dave", "erin", "frank"])
        screens.push(`--- ${name}'s screen ---\n${await seatScreen(project, shell.COTAL_SPACE!, name, 40)}`);
      throw new Error(
        `${(err as Error).message}\n--- ps ---\n${(await cotal(["ps"])).stdout}\n--- codex turns ---\n${codexTurns}\n--- claude/opencode/pi/copilot turns ---\n${messageTurns}\n--- status ---\n${status}\n${screens.join("\n")}`,
        { cause: err },
      );
    }
    // Every later hop was a turn the manager started: the wake line is what the seat's model was given.
    expect(inputTexts(bobWoken()!).some((t) => t.includes(WAKE))).toBe(true);
    expect(lastUserText(carolWoken()!)).toContain(WAKE);
    expect(geminiLastUser(daveWoken()!)).toContain(WAKE);
    expect(allText(erinWoken()!)).toContain(WAKE);
    expect(allText(frankWoken()!)).toContain(WAKE);
    expect(lastUserText(aliceWoken()!)).toContain(WAKE);
    // Each hop was handed over as a DM from the seat that sent it (the connector's attribution, not the text).
    expect(JSON.stringify(bobWoken()!.body?.input ?? [])).toContain("DM from local.alice");
    expect(allText(carolWoken()!)).toContain("DM from local.bob");
    expect(geminiText(daveWoken()!)).toContain("DM from local.carol");
    expect(allText(erinWoken()!)).toContain("DM from local.dave");
    expect(allText(frankWoken()!)).toContain("DM from local.erin");
    expect(allText(aliceWoken()!)).toContain("DM from local.frank");

    const roster = ok(await cotal(["roster", "--json"])).json<Array<{ id: string; runtime?: string }>>();
    const runtimes = Object.fromEntries(
      roster.filter((r) => ["alice", "bob", "carol", "dave", "erin", "frank"].some((n) => r.id === `local.${n}`)).map((r) => [r.id, r.runtime]),
    );
    expect(runtimes).toEqual({
      "local.alice": "claude",
      "local.bob": "codex",
      "local.carol": "opencode",
      "local.dave": "gemini",
      "local.erin": "pi",
      "local.frank": "copilot",
    });
  }, 2_100_000);
});

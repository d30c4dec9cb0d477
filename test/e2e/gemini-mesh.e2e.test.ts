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
import { mkdirSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findNatsServer } from "../../broker/index.js";
import { streamViolation } from "../../connector/internal.js";
import { frameOf, type AgUiFrame, type CotalMessage } from "../../schemas/index.js";
import { contentTexts, functionResponses, GeminiDouble, offeredTools, type RecordedGeminiRequest } from "../../testbed/gemini-double.js";
import { buildCli, cleanEnv, freePort, runCotal, exitedOk } from "../harness/cli.js";
import { until } from "../../testbed/until.js";

const DM_TOOL = "mcp_cotal_cotal_dm";
const PING = "ping bob, alice here";
const ANSWER = "hi alice, bob here";
const WAKE = "You have new Cotal mail";
const ASK = "please run echo asked";
const AFTER = "are you still there, bob?";

let project: string;
let double: GeminiDouble;
let shell: NodeJS.ProcessEnv;

const cotal = (args: string[], timeoutMs = 240_000) => runCotal(args, { cwd: project, env: shell, timeoutMs });
const ok = exitedOk;
const text = (r: RecordedGeminiRequest): string => contentTexts(r).join("\n");
/** The last user turn's text (the prompt and what the hook added to it). */
const lastUser = (r: RecordedGeminiRequest): string => {
  const users = (r.body?.contents ?? []).filter((c) => c.role === "user" && (c.parts ?? []).some((p) => p.text !== undefined));
  return (users.at(-1)?.parts ?? []).map((p) => p.text ?? "").join("\n");
};
const responded = (r: RecordedGeminiRequest, name: string): boolean => functionResponses(r).some((f) => f.name === name);

beforeAll(async () => {
  await buildCli();
  project = await mkdtemp(join(tmpdir(), "cotal-gemini-mesh-"));
  double = await GeminiDouble.start();
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
  const home = join(project, "home");
  mkdirSync(join(home, ".gemini"), { recursive: true });
  writeFileSync(join(home, ".gemini", "settings.json"), JSON.stringify({ security: { auth: { selectedType: "gemini-api-key" } } }));
  // A space of its own: a connector's custody is per host and principal, and other meshes on this host may seat a bob too.
  shell = cleanEnv({
    HOME: home,
    NATS_SERVER_BIN: findNatsServer(),
    GEMINI_API_KEY: "gemini-double-key",
    GOOGLE_GEMINI_BASE_URL: double.baseUrl,
    COTAL_SPACE: `gmmesh-${process.pid}`,
  });
  ok(await cotal(["up", "-d", "--port", String(await freePort())]));
}, 180_000);

afterAll(async () => {
  if (project) await cotal(["down"]).catch(() => undefined);
  await double?.close();
  if (project) await rm(project, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
});

describe("a Gemini CLI seat on a mixed mesh, unattended, through the shipped CLI", () => {
  it("a DM wakes gemini bob, the hook hands it to his model, he answers echo alice with the cotal MCP tool and sees her echo; ps names his posture", async () => {
    ok(await cotal(["spawn", "-d", "--agent", "echo", "--name", "alice"]));
    const bob = ok(await cotal(["spawn", "-d", "--agent", "gemini", "--name", "bob", "--wait-ms", "240000", "--json"]));
    expect(bob.json(), bob.stdout).toMatchObject({ name: "bob", outcome: "started", seat: { state: "joined" } });
    ok(await cotal(["send", "dm", "bob", PING, "--as", "alice", "--impersonate"]));
    const requests = () => double.turns().map((r) => `${r.step ?? "-"}: ${lastUser(r).slice(0, 300)}`);
    try {
      await until(() => double.turns().some((r) => text(r).includes(PING)), 300_000, "bob's model to be handed alice's DM", 500);
      await until(() => double.turns().some((r) => responded(r, DM_TOOL)), 180_000, "bob's DM tool call to return", 500);
      await until(() => double.turns().some((r) => text(r).includes(`echo: ${ANSWER}`)), 300_000, "bob's model to see alice's echo", 500);
    } catch (err) {
      throw new Error(`${(err as Error).message}\n--- ps ---\n${(await cotal(["ps"])).stdout}\n--- requests ---\n${requests().join("\n")}`, { cause: err });
    }
    // Bob was woken by the manager typing into his terminal: nobody else typed.
    const dmTurn = double.turns().find((r) => text(r).includes(PING))!;
    expect(lastUser(dmTurn)).toContain(WAKE);
    const result = functionResponses(double.turns().find((r) => responded(r, DM_TOOL))!).find((f) => f.name === DM_TOOL)!;
    expect(JSON.stringify(result.response)).not.toMatch(/error/i);
    const ps = ok(await cotal(["ps"]));
    expect(ps.stdout).toMatch(/bob\s+gemini\s+joined\s.*policy: asks refused, deny floor \(no failed-turn condition; no carry; runs: tokens, not dollars\)/);

    // Bob's turns on his event plane, from Gemini's session records: well formed, the tool call by name; neither the mail nor the call's arguments.
    const frames = async (): Promise<AgUiFrame[]> =>
      ok(await cotal(["history", "events.local.bob", "--json"]))
        .json<Array<{ message: CotalMessage }>>()
        .flatMap((h) => {
          const f = frameOf(h.message.parts);
          return f ? [f] : [];
        });
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
    ok(await cotal(["send", "dm", "bob", ASK, "--as", "alice", "--impersonate"]));
    await until(() => double.turns().some((r) => responded(r, "run_shell_command")), 300_000, "bob's shell call to be answered", 500);
    ok(await cotal(["send", "dm", "bob", AFTER, "--as", "alice", "--impersonate"]));
    await until(() => double.turns().some((r) => lastUser(r).includes(AFTER)), 300_000, "bob to be woken after the refused command", 500);
    const refused = double
      .turns()
      .flatMap((r) => functionResponses(r))
      .filter((f) => f.name === "run_shell_command");
    // Gemini leaves a tool its policy denies outright out of what it offers the model; a call of it anyway never runs.
    expect(refused.length).toBeGreaterThan(0);
    for (const f of refused) expect(JSON.stringify(f.response)).toMatch(/not found|denied by policy/);
    expect(double.turns().some((r) => offeredTools(r).includes(DM_TOOL))).toBe(true);
    expect(double.turns().flatMap((r) => offeredTools(r))).not.toContain("run_shell_command");
  }, 1_200_000);
});

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
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findNatsServer } from "../../broker/index.js";
import { buildCli, cleanEnv, freePort, runCotal, exitedOk } from "../harness/cli.js";
import { copilotShell } from "../harness/runtime-shell.js";
import { allText, lastUserText, ModelDouble, toolResults } from "../../testbed/model-double.js";
import { seatFrames } from "../harness/seat-plane.js";
import { until } from "../../testbed/until.js";

const DM_TOOL = "cotal-cotal_dm";
const PING = "ping bob, alice here";
const ANSWER = "hi alice, bob here";
const WAKE = "You have new Cotal mail";
const ASK = "please run echo asked";
const AFTER = "are you still there, bob?";
const KEY = "sk-copilot-double-secret-0123456789";

let project: string;
let home: string;
let model: ModelDouble;
let shell: NodeJS.ProcessEnv;

const cotal = (args: string[], timeoutMs = 240_000) => runCotal(args, { cwd: project, env: shell, timeoutMs });
const ok = exitedOk;

/** bob's plane through the shipped CLI: his frames, oldest first. */
const frames = () => seatFrames(cotal, "bob");

beforeAll(async () => {
  await buildCli();
  project = await mkdtemp(join(tmpdir(), "cotal-copilot-seat-"));
  model = await ModelDouble.start([
    { when: (r) => allText(r).includes(PING) && allText(r).includes(WAKE), reply: [{ tool: DM_TOOL, input: { to: "alice", text: ANSWER } }] },
    { afterToolResult: DM_TOOL, reply: ["Answered alice."] },
    { when: (r) => allText(r).includes(`echo: ${ANSWER}`), reply: ["Alice echoed."] },
    { when: (r) => allText(r).includes(ASK), reply: [{ tool: "bash", input: { command: "echo asked", description: "asks" } }] },
    { afterToolResult: "bash", reply: ["The shell was refused."] },
    { when: (r) => allText(r).includes(AFTER), reply: ["Still here."] },
  ]);
  home = join(project, "home");
  shell = cleanEnv({ HOME: home, NATS_SERVER_BIN: findNatsServer(), ...copilotShell(model.url, KEY), COTAL_SPACE: `cpseat-${process.pid}` });
  ok(await cotal(["up", "-d", "--port", String(await freePort())]));
}, 180_000);

afterAll(async () => {
  if (project) await cotal(["down"]).catch(() => undefined);
  await model?.close();
  if (project) await rm(project, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
});

describe("a GitHub Copilot CLI seat on a mixed mesh, unattended, through the shipped CLI", () => {
  it("a DM wakes copilot bob, the hook hands it to his model, he answers echo alice with cotal_dm and sees her echo; ps names his posture", async () => {
    ok(await cotal(["spawn", "-d", "--agent", "echo", "--name", "alice"]));
    const bob = ok(await cotal(["spawn", "-d", "--agent", "copilot", "--name", "bob", "--wait-ms", "240000", "--json"]));
    expect(bob.json(), bob.stdout).toMatchObject({ name: "bob", outcome: "started", seat: { state: "joined" } });
    ok(await cotal(["send", "dm", "bob", PING, "--as", "alice", "--impersonate"]));
    const requests = () => model.requests.filter((r) => r.path === "/v1/messages").map((r) => `${r.kind}: ${lastUserText(r).slice(0, 300)}`);
    try {
      await until(() => model.mainRequests.some((r) => allText(r).includes(PING)), 300_000, "bob's model to be handed alice's DM", 500);
      await until(() => model.mainRequests.some((r) => toolResults(r).some((t) => t.name === DM_TOOL)), 180_000, "bob's cotal_dm to return", 500);
      await until(() => model.mainRequests.some((r) => allText(r).includes(`echo: ${ANSWER}`)), 300_000, "bob's model to see alice's echo", 500);
    } catch (err) {
      throw new Error(`${(err as Error).message}\n--- ps ---\n${(await cotal(["ps"])).stdout}\n--- requests ---\n${requests().join("\n")}`, { cause: err });
    }
    const dmTurn = model.mainRequests.find((r) => allText(r).includes(PING))!;
    expect(allText(dmTurn)).toContain(WAKE);
    expect(dmTurn.headers["x-api-key"]).toBe(KEY);
    const result = model.mainRequests.flatMap((r) => toolResults(r)).find((t) => t.name === DM_TOOL)!;
    expect(result.isError, result.text).toBe(false);
    // His turn is on his event plane: a run that started and finished, the cotal_dm call by Copilot's name, no mail.
    await until(async () => (await frames()).some((f) => f.events.some((e) => e.type === "RUN_FINISHED")), 120_000, "bob's run finished on his plane", 1_000);
    const events = (await frames()).flatMap((f) => f.events);
    expect(events.map((e) => e.type)).toContain("RUN_STARTED");
    expect(events.some((e) => e.type === "TOOL_CALL_START" && (e as { toolCallName?: string }).toolCallName === DM_TOOL)).toBe(true);
    expect(JSON.stringify(events)).not.toContain(PING);
    const ps = ok(await cotal(["ps"]));
    expect(ps.stdout).toMatch(/bob\s+copilot\s+joined\s.*asks denied, deny floor hook/);
    // The user's own Copilot home was never written.
    expect(existsSync(join(home, ".copilot"))).toBe(false);
  }, 1_200_000);

  it("a shell command Copilot would ask about is denied unattended; the model is told and the next DM still wakes bob", async () => {
    ok(await cotal(["send", "dm", "bob", ASK, "--as", "alice", "--impersonate"]));
    await until(() => model.mainRequests.some((r) => toolResults(r).some((t) => t.name === "bash")), 300_000, "bob's refused shell call to return", 500);
    ok(await cotal(["send", "dm", "bob", AFTER, "--as", "alice", "--impersonate"]));
    await until(() => model.mainRequests.some((r) => allText(r).includes(AFTER)), 300_000, "bob to be woken after the refused ask", 500);
    // Copilot answers a denied call with its rule as the tool's result: the command never ran.
    const bash = model.mainRequests.flatMap((r) => toolResults(r)).filter((t) => t.name === "bash");
    expect(bash.length).toBeGreaterThan(0);
    for (const t of bash) expect(t.text).toContain("denied due to the following rules: `shell`");
  }, 700_000);
});

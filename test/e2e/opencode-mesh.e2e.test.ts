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
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findNatsServer } from "../../broker/index.js";
import { buildCli, cleanEnv, freePort, runCotal, exitedOk } from "../harness/cli.js";
import { allText, lastUserText, ModelDouble, toolResults } from "../../testbed/model-double.js";
import { writeOpencodeConfig } from "../harness/runtime-shell.js";
import { until } from "../../testbed/until.js";

const DM_TOOL = "cotal_cotal_dm";
const PING = "ping bob, alice here";
const ANSWER = "hi alice, bob here";
const WAKE = "You have new Cotal mail";
const ASK = "please run echo asked";
const AFTER = "are you still there, bob?";

let project: string;
let model: ModelDouble;
let shell: NodeJS.ProcessEnv;

const cotal = (args: string[], timeoutMs = 240_000) => runCotal(args, { cwd: project, env: shell, timeoutMs });
const ok = exitedOk;

beforeAll(async () => {
  await buildCli();
  project = await mkdtemp(join(tmpdir(), "cotal-opencode-mesh-"));
  model = await ModelDouble.start([
    // Bob's first woken turn: the plugin handed alice's DM over; answer her through Cotal's MCP server.
    { when: (r) => allText(r).includes(PING) && lastUserText(r).includes(WAKE), reply: [{ tool: DM_TOOL, input: { to: "alice", text: ANSWER } }] },
    { afterToolResult: DM_TOOL, reply: ["Answered alice."] },
    // Bob's second woken turn: alice's echo reached his model.
    { when: (r) => allText(r).includes(`echo: ${ANSWER}`), reply: ["Alice echoed."] },
    // A bash command the user's own rules ask about: denied unattended, the model is told.
    { when: (r) => lastUserText(r).includes(ASK), reply: [{ tool: "bash", input: { command: "echo asked", description: "asks" } }] },
    { when: (r) => lastUserText(r).includes(AFTER), reply: ["Still here."] },
  ]);
  const home = join(project, "home");
  // The user is asked before any bash command (a rule of their own config).
  writeOpencodeConfig(home, model.url, { permission: { bash: "ask" } });
  // A space of its own: a connector's custody is per host and principal, and other meshes on this host may seat a bob too.
  shell = cleanEnv({ HOME: home, NATS_SERVER_BIN: findNatsServer(), OPENCODE_DISABLE_MODELS_FETCH: "1", COTAL_SPACE: `ocmesh-${process.pid}` });
  ok(await cotal(["up", "-d", "--port", String(await freePort())]));
}, 180_000);

afterAll(async () => {
  if (project) await cotal(["down"]).catch(() => undefined);
  await model?.close();
  if (project) await rm(project, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
});

describe("an OpenCode seat on a mixed mesh, unattended, through the shipped CLI", () => {
  it("a DM wakes opencode bob, the plugin hands it to his model, he answers echo alice with cotal_dm and sees her echo; ps names his posture", async () => {
    ok(await cotal(["spawn", "-d", "--agent", "echo", "--name", "alice"]));
    const bob = ok(await cotal(["spawn", "-d", "--agent", "opencode", "--name", "bob", "--wait-ms", "240000", "--json"]));
    expect(bob.json(), bob.stdout).toMatchObject({ name: "bob", outcome: "started", seat: { state: "joined" } });
    ok(await cotal(["send", "dm", "bob", PING, "--as", "alice", "--impersonate"]));
    const requests = () => model.requests.filter((r) => r.path === "/v1/messages").map((r) => `${r.kind}: ${lastUserText(r).slice(0, 300)}`);
    try {
      await until(() => model.mainRequests.some((r) => allText(r).includes(PING)), 300_000, "bob's model to be handed alice's DM", 500);
      await until(() => toolResults(model.mainRequests.at(-1)!).some((t) => t.name === DM_TOOL), 180_000, "bob's cotal_dm to return", 500);
      await until(() => model.mainRequests.some((r) => allText(r).includes(`echo: ${ANSWER}`)), 300_000, "bob's model to see alice's echo", 500);
    } catch (err) {
      throw new Error(`${(err as Error).message}\n--- ps ---\n${(await cotal(["ps"])).stdout}\n--- requests ---\n${requests().join("\n")}`, { cause: err });
    }
    // Bob was woken by the manager typing into his terminal: nobody else typed.
    const dmTurn = model.mainRequests.find((r) => allText(r).includes(PING))!;
    expect(lastUserText(dmTurn)).toContain(WAKE);
    const result = toolResults(model.mainRequests.find((r) => toolResults(r).some((t) => t.name === DM_TOOL))!).find((t) => t.name === DM_TOOL)!;
    expect(result.isError, result.text).toBe(false);
    const ps = ok(await cotal(["ps"]));
    expect(ps.stdout).toMatch(/bob\s+opencode\s+joined\s.*agent cotal: asks refused, deny floor \(no carry\)/);

    // An ask of the user's rules is refused unattended: the model is told, the seat does not wait on a dialog, the next DM wakes it.
    ok(await cotal(["send", "dm", "bob", ASK, "--as", "alice", "--impersonate"]));
    await until(() => model.mainRequests.some((r) => lastUserText(r).includes(ASK)), 300_000, "bob's model to be handed the ask", 500);
    ok(await cotal(["send", "dm", "bob", AFTER, "--as", "alice", "--impersonate"]));
    await until(() => model.mainRequests.some((r) => lastUserText(r).includes(AFTER)), 300_000, "bob to be woken after the refused ask", 500);
    // The refused command never ran: its only result is the refusal.
    const bash = model.mainRequests.flatMap((r) => toolResults(r)).filter((t) => t.name === "bash");
    expect(bash.length).toBeGreaterThan(0);
    for (const t of bash) expect(t, t.text).toMatchObject({ isError: true, text: expect.stringContaining("prevents you from using this specific tool call") });
  }, 1_200_000);
});

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
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findNatsServer } from "../../broker/index.js";
import { buildCli, cleanEnv, freePort, runCotal, exitedOk } from "../harness/cli.js";
import { writeKiloConfig } from "../harness/runtime-shell.js";
import { expectDmAnsweredAndEchoed, expectTurnOnPlane } from "../harness/seat-cases.js";
import { allText, lastUserText, ModelDouble, toolResults } from "../../testbed/model-double.js";
import { until } from "../../testbed/until.js";

const DM_TOOL = "cotal_cotal_dm";
const PING = "ping bob, alice here";
const ANSWER = "hi alice, bob here";
const WAKE = "You have new Cotal mail";
const ASK = "please commit your work";
const AFTER = "are you still there, bob?";
const KEY_VAR = "DOUBLE_KILO_KEY";
const KEY = "sk-kilo-double-secret-0123456789";

let project: string;
let home: string;
let model: ModelDouble;
let shell: NodeJS.ProcessEnv;

const cotal = (args: string[], timeoutMs = 240_000) => runCotal(args, { cwd: project, env: shell, timeoutMs });
const ok = exitedOk;

/** The user's Kilo config folder, file by file, as text (to prove it unchanged). */
function userKiloFolder(): Record<string, string> {
  const dir = join(home, ".config", "kilo");
  return Object.fromEntries(readdirSync(dir).map((f) => [f, readFileSync(join(dir, f), "utf8")]));
}

beforeAll(async () => {
  await buildCli();
  project = await mkdtemp(join(tmpdir(), "cotal-kilo-seat-"));
  model = await ModelDouble.start([
    // Bob's first woken turn: the plugin handed alice's DM over; answer her through Cotal's MCP server.
    { when: (r) => allText(r).includes(PING) && lastUserText(r).includes(WAKE), reply: [{ tool: DM_TOOL, input: { to: "alice", text: ANSWER } }] },
    { afterToolResult: DM_TOOL, reply: ["Answered alice."] },
    // Bob's second woken turn: alice's echo reached his model.
    { when: (r) => allText(r).includes(`echo: ${ANSWER}`), reply: ["Alice echoed."] },
    // A shell command Kilo's own defaults ask about: refused unattended, the turn ends.
    { when: (r) => lastUserText(r).includes(ASK), reply: [{ tool: "bash", input: { command: "git commit -m work", description: "commit" } }] },
    { when: (r) => lastUserText(r).includes(AFTER), reply: ["Still here."] },
  ]);
  home = join(project, "home");
  writeKiloConfig(home, model.url, KEY_VAR);
  // A space of its own: a connector's custody is per host and principal, and other meshes on this host may seat a bob too.
  shell = cleanEnv({
    HOME: home,
    NATS_SERVER_BIN: findNatsServer(),
    [KEY_VAR]: KEY,
    KILO_DISABLE_MODELS_FETCH: "1",
    KILO_TELEMETRY_LEVEL: "off",
    COTAL_SPACE: `kiloseat-${process.pid}`,
  });
  ok(await cotal(["up", "-d", "--port", String(await freePort())]));
}, 180_000);

afterAll(async () => {
  if (project) await cotal(["down"]).catch(() => undefined);
  await model?.close();
  if (project) await rm(project, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
});

describe("a Kilo Code seat on a mixed mesh, unattended, through the shipped CLI", () => {
  it("a DM wakes kilo bob, the plugin hands it to his model, he answers echo alice with cotal_dm and sees her echo; his turn is on his plane", async () => {
    const before = userKiloFolder();
    const dmTurn = await expectDmAnsweredAndEchoed(cotal, model, { agent: "kilo", dmTool: DM_TOOL, ping: PING, answer: ANSWER, waitMs: 240_000 });
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
    ok(await cotal(["send", "dm", "bob", ASK, "--as", "alice", "--impersonate"]));
    await until(() => model.mainRequests.some((r) => lastUserText(r).includes(ASK)), 300_000, "bob's model to be handed the ask", 500);
    ok(await cotal(["send", "dm", "bob", AFTER, "--as", "alice", "--impersonate"]));
    await until(() => model.mainRequests.some((r) => lastUserText(r).includes(AFTER)), 300_000, "bob to be woken after the refused ask", 500);
    // The refused command never ran: its only result is the refusal.
    const bash = model.mainRequests.flatMap((r) => toolResults(r)).filter((t) => t.name === "bash");
    expect(bash.length).toBeGreaterThan(0);
    for (const t of bash)
      expect(t, t.text).toMatchObject({ isError: true, text: expect.stringContaining("rejected permission to use this specific tool call") });
  }, 700_000);
});

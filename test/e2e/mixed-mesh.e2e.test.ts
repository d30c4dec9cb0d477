// A mixed mesh through the shipped CLI only: `cotal up -d` in a
// fresh folder from a shell that holds the Claude double's URL and key and whose own
// ~/.codex/config.toml names the Responses double as its provider; `cotal spawn -d --agent codex
// --name bob`, then `cotal spawn -d --agent claude --name alice` with an opening prompt. Alice's
// scripted turn DMs bob; bob, a real Codex TUI idle under the manager's tmux, is woken with nobody
// typing, his hook hands the DM to his model (it is in the Responses request), which answers
// with cotal_dm as a namespaced MCP function call; alice is woken and her model sees the answer.
// ps and the roster name both seats' runtime, ps bob's posture. The doubles are served from this process: every
// CLI call is async.
import { mkdirSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findNatsServer } from "../../broker/index.js";
import { claudeEnv } from "../harness/claude-runner.js";
import { buildCli, freePort, runCotal, exitedOk } from "../harness/cli.js";
import { allText, isMainLoopRequest, ModelDouble, newTurnText } from "../../testbed/model-double.js";
import { until } from "../../testbed/until.js";
import { functionOutputs, inputTexts, ResponsesDouble, codexProviderConfig, type RecordedResponsesRequest } from "../../testbed/responses-double.js";

const DM_TOOL = "mcp__plugin_cotal_cotal__cotal_dm";
const KEY_VAR = "DOUBLE_PROVIDER_KEY";
const OPENING = "Say hello to bob over Cotal.";
const HELLO = "hello bob, alice here";
const ANSWER = "hi alice, bob here";

let project: string;
let claude: ModelDouble;
let codex: ResponsesDouble;
let shell: NodeJS.ProcessEnv;

const cotal = (args: string[], timeoutMs = 150_000) => runCotal(args, { cwd: project, env: shell, timeoutMs });
const ok = exitedOk;
const sees = (r: RecordedResponsesRequest, text: string): boolean => JSON.stringify(r.body?.input ?? []).includes(text);

beforeAll(async () => {
  await buildCli();
  project = await mkdtemp(join(tmpdir(), "cotal-mixed-"));
  claude = await ModelDouble.start([
    // Alice's opening turn: DM bob.
    { when: (r) => newTurnText(r).includes(OPENING), reply: [{ tool: DM_TOOL, input: { to: "bob", text: HELLO } }] },
    { afterToolResult: DM_TOOL, reply: ["Sent."] },
    // Alice's woken turn: she sees bob's answer.
    { when: (r) => allText(r).includes(ANSWER), reply: ["Got bob's answer."] },
  ]);
  codex = await ResponsesDouble.start();
  // Bob's woken turn: the hook handed alice's DM over; answer her through the cotal MCP server.
  codex.push(
    {
      when: (r) => sees(r, HELLO) && functionOutputs(r).length === 0,
      reply: [{ namespace: "mcp__cotal", tool: "cotal_dm", arguments: { to: "alice", text: ANSWER } }],
    },
    { when: (r) => functionOutputs(r).length > 0, reply: ["Answered."] },
  );
  const home = join(project, "home");
  mkdirSync(join(home, ".codex"), { recursive: true });
  writeFileSync(join(home, ".codex", "config.toml"), codexProviderConfig(codex.baseUrl, KEY_VAR));
  // A space of its own: a connector's custody is per host and principal, and other meshes on this host may seat a bob too.
  shell = {
    ...claudeEnv({ baseUrl: claude.url, home }),
    NATS_SERVER_BIN: findNatsServer(),
    [KEY_VAR]: "sk-codex-double",
    COTAL_SPACE: `mixed-${process.pid}`,
  };
  ok(await cotal(["up", "-d", "--port", String(await freePort())]));
}, 120_000);

afterAll(async () => {
  if (project) await cotal(["down"]).catch(() => undefined);
  await claude?.close();
  await codex?.close();
  if (project) await rm(project, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
});

describe("a mixed mesh, unattended, through the shipped CLI", () => {
  it("claude alice DMs codex bob; bob is woken, his model answers with cotal_dm, alice sees it; ps and roster name both runtimes", async () => {
    const bob = ok(await cotal(["spawn", "-d", "--agent", "codex", "--name", "bob", "--wait-ms", "120000", "--json"]));
    expect(bob.json(), bob.stdout).toMatchObject({ name: "bob", outcome: "started", seat: { state: "joined" } });
    const alice = ok(await cotal(["spawn", "-d", "--agent", "claude", "--name", "alice", "--prompt", OPENING, "--wait-ms", "120000", "--json"]));
    expect(alice.json(), alice.stdout).toMatchObject({ name: "alice", outcome: "started" });

    const screens = async () => `--- ps ---\n${(await cotal(["ps"])).stdout}`;
    try {
      await until(() => codex.turns().some((r) => sees(r, HELLO)), 150_000, "bob's model to be handed alice's DM", 500);
      await until(() => codex.turns().some((r) => functionOutputs(r).length > 0), 60_000, "bob's cotal_dm to return", 500);
      await until(() => claude.requests.some((r) => isMainLoopRequest(r) && allText(r).includes(ANSWER)), 150_000, "alice's model to see bob's answer", 500);
    } catch (err) {
      throw new Error(
        `${(err as Error).message}\n${await screens()}\ncodex turns: ${codex
          .turns()
          .map((t) => inputTexts(t).join(" | "))
          .join("\n")}`,
        { cause: err },
      );
    }
    // Bob was woken by the manager typing into his terminal: nobody else typed.
    expect(codex.turns().some((r) => inputTexts(r).some((t) => t.includes("You have new Cotal mail")))).toBe(true);
    const ps = ok(await cotal(["ps"]));
    expect(ps.stdout).toMatch(/alice\s+claude\s+joined\s/);
    expect(ps.stdout).toMatch(/bob\s+codex\s+joined\s.*approval never, sandbox workspace-write \(pre-tool hook: bash only; deny floor: Bash hook only;/);
    expect(ps.stdout).toMatch(/alice\s+claude\s+joined\s.*dontAsk\s*$/m);
    // The roster names each seat's runtime as its card says it (the console and the dashboard show the same field).
    const roster = ok(await cotal(["roster", "--json"])).json<Array<{ id: string; runtime?: string }>>();
    expect(Object.fromEntries(roster.filter((r) => r.id === "local.alice" || r.id === "local.bob").map((r) => [r.id, r.runtime]))).toEqual({
      "local.alice": "claude",
      "local.bob": "codex",
    });
  }, 420_000);
});

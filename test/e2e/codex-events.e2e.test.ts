// A Codex seat publishes its turns on the event plane, through the shipped CLI: bob, a
// real Codex TUI under the manager's tmux against the Responses double, is woken by a DM; his
// turn (a text, a cotal_dm call, a closing text) reaches events.local.bob as ordered frames an
// observer reads (`cotal history`, `cotal console`), in the same AG-UI shape a Claude seat's turn
// has, with the tool call by name and its arguments and result nowhere. roster, console and ps
// name his runtime.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { streamViolation } from "../../connector/internal.js";
import { frameOf, type AgUiFrame, type CotalMessage } from "../../schemas/index.js";
import { functionOutputs, inputTexts, type RecordedResponsesRequest, type ResponsesDouble } from "../../testbed/responses-double.js";
import { ONE_TOOL_TURN } from "../harness/agui-shapes.js";
import { CotalProcess, exitedOk } from "../harness/cli.js";
import { CodexPath } from "../harness/codex-path.js";
import { until } from "../../testbed/until.js";

const DM = "please look at the build";
const SECRET_ARG = "SECRET-ARGUMENT in the cotal_dm text";
const LOOKING = "looking into it";
const DONE = "all done";

let u: CodexPath;
let codex: ResponsesDouble;

const cotal = (args: string[]) => u.cotal(args);
const ok = exitedOk;
const sees = (r: RecordedResponsesRequest, text: string): boolean => JSON.stringify(r.body?.input ?? []).includes(text);

/** bob's plane as an observer reads it through the shipped CLI: his frames, oldest first. */
async function frames(): Promise<AgUiFrame[]> {
  const r = ok(await cotal(["history", "events.local.bob", "--json"]));
  return r.json<Array<{ message: CotalMessage }>>().flatMap((h) => {
    const f = frameOf(h.message.parts);
    return f ? [f] : [];
  });
}

/** Every rollout under the project (bob's private CODEX_HOME is in his seat folder), for a failure's message. */
function rollouts(dir: string): string {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (/^rollout-.*\.jsonl$/.test(e.name)) out.push(`--- ${p}\n${readFileSync(p, "utf8")}`);
    }
  };
  walk(dir);
  return out.join("\n");
}

beforeAll(async () => {
  // A space of its own: a connector's custody is per host and principal.
  u = await CodexPath.start({ prefix: "cotal-codex-events-", key: "sk-codex-double", shell: { COTAL_SPACE: `cxev-${process.pid}` }, timeoutMs: 150_000 });
  codex = u.double;
  codex.push(
    {
      when: (r) => sees(r, DM) && functionOutputs(r).length === 0,
      reply: [LOOKING, { namespace: "mcp__cotal", tool: "cotal_dm", arguments: { to: "alice", text: SECRET_ARG } }],
    },
    { when: (r) => functionOutputs(r).length > 0, reply: [DONE] },
  );
}, 120_000);

afterAll(async () => {
  await u?.close();
});

describe("a Codex seat's event plane", () => {
  it("a woken turn reaches events.local.bob as one well-formed run an observer reads; no tool arguments or results", async () => {
    ok(await cotal(["spawn", "-d", "--agent", "codex", "--name", "bob", "--wait-ms", "120000"]));
    ok(await cotal(["send", "dm", "bob", DM, "--as", "alice", "--impersonate"]));
    try {
      await until(() => codex.turns().some((r) => functionOutputs(r).length > 0), 150_000, "bob's cotal_dm to return to his model", 500);
      await until(async () => (await frames()).some((f) => f.events.some((e) => e.type === "RUN_FINISHED")), 60_000, "bob's run finished on his plane", 500);
    } catch (err) {
      const turns = codex
        .turns()
        .map((t) => inputTexts(t).join(" | "))
        .join("\n");
      throw new Error(`${(err as Error).message}\n--- ps ---\n${(await cotal(["ps"])).stdout}\ncodex turns:\n${turns}\n${rollouts(u.project)}`, { cause: err });
    }
    const got = await frames();
    // Ordered, gap-free frames from one writer.
    expect(got.map((f) => f.seq)).toEqual(got.map((_, i) => i + 1));
    const events = got.flatMap((f) => f.events.map((e) => ({ ...e, runId: (e as { runId?: string }).runId ?? f.runId })));
    expect(streamViolation(events)).toBeUndefined();
    const detail = JSON.stringify(events, null, 1);
    // The same shape a Claude seat's one-tool turn has: the prompt, a text, the tool call, a text.
    expect(
      events.map((e) => e.type),
      detail,
    ).toEqual([...ONE_TOOL_TURN]);
    const texts = events.flatMap((e) => ("delta" in e ? [e.delta] : []));
    expect(texts.slice(1), detail).toEqual([LOOKING, DONE]);
    expect(events.find((e) => e.type === "TEXT_MESSAGE_START")).toMatchObject({ role: "user" });
    expect(events.find((e) => e.type === "TOOL_CALL_START")).toMatchObject({ toolCallName: "mcp__cotal__cotal_dm" });
    // The call's arguments (the DM it sent) and its result are not on the plane.
    expect(detail).not.toContain("SECRET-ARGUMENT");
    expect(detail).not.toContain("alice");

    // What the operator sees: the runtime on the roster (human and JSON), in the console, in ps.
    const roster = ok(await cotal(["roster", "--json"])).json<Array<{ id: string; runtime?: string }>>();
    expect(roster.find((r) => r.id === "local.bob")).toMatchObject({ runtime: "codex" });
    expect(ok(await cotal(["roster"])).stdout).toMatch(/^bob\s+-\s+codex\s+/m);
    expect(ok(await cotal(["ps"])).stdout).toMatch(/bob\s+codex\s+joined\s.*approval never, sandbox workspace-write/);
    expect(ok(await cotal(["ps"])).stdout).not.toContain("no event plane");
    const watch = CotalProcess.spawn(["console", "--plain", "--agent", "bob"], { cwd: u.project, env: u.shell });
    try {
      await until(
        () => watch.lines.some((l) => /^roster bob idle, runs codex/.test(l)),
        30_000,
        () => `the console's roster line for bob\n${watch.lines.join("\n")}`,
      );
      await until(
        () => watch.lines.some((l) => /^\[history\] .* bob ⚙ mcp__cotal__cotal_dm started/.test(l)),
        30_000,
        () => `bob's tool call in the console\n${watch.lines.join("\n")}`,
      );
      await until(
        () => watch.lines.some((l) => /^\[history\] .* bob » says: all done/.test(l)),
        30_000,
        () => `bob's reply in the console\n${watch.lines.join("\n")}`,
      );
    } finally {
      await watch.stop("SIGTERM");
    }
  }, 360_000);
});

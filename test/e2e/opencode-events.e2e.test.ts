// An OpenCode seat publishes its turns on the event plane, through the shipped CLI: bob,
// a real OpenCode TUI under the manager's terminal against the Anthropic Messages double, is woken
// by a DM; Cotal's plugin journals his turn (a text, a cotal_dm call, a closing text) and his
// connector publishes it on events.local.bob. An observer (its own minted credential) sees it live
// in `cotal console` while it happens, and afterwards as ordered frames in `cotal history`: the same
// AG-UI shape a Claude or Codex seat's one-tool turn has, the tool call by OpenCode's name for it,
// its arguments, its result and the handed-over DM nowhere. roster and ps name his runtime.
import { readdirSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findNatsServer } from "../../broker/index.js";
import { streamViolation } from "../../connector/internal.js";
import { frameOf, type AgUiFrame, type CotalMessage } from "../../schemas/index.js";
import { ONE_TOOL_TURN } from "../harness/agui-shapes.js";
import { buildCli, cleanEnv, CotalProcess, freePort, runCotal, exitedOk } from "../harness/cli.js";
import { allText, lastUserText, ModelDouble, toolResults } from "../../testbed/model-double.js";
import { writeOpencodeConfig } from "../harness/runtime-shell.js";
import { until } from "../../testbed/until.js";

const DM_TOOL = "cotal_cotal_dm";
const DM = "please look at the build";
const SECRET_ARG = "SECRET-ARGUMENT in the cotal_dm text";
const LOOKING = "looking into it";
const DONE = "all done";
const WAKE = "You have new Cotal mail";

let project: string;
let model: ModelDouble;
let shell: NodeJS.ProcessEnv;
let watcher: string;

const cotal = (args: string[], timeoutMs = 240_000) => runCotal(args, { cwd: project, env: shell, timeoutMs });
const ok = exitedOk;

/** bob's plane as the observer reads it through the shipped CLI: his frames, oldest first. */
async function frames(): Promise<AgUiFrame[]> {
  const r = ok(await cotal(["history", "events.local.bob", "--json", "--creds", watcher]));
  return r.json<Array<{ message: CotalMessage }>>().flatMap((h) => {
    const f = frameOf(h.message.parts);
    return f ? [f] : [];
  });
}

/** What the model was asked and answered, and bob's journals (under his private home), for a failure's message. */
function diagnosis(): string {
  const asked = model.requests
    .filter((r) => r.path === "/v1/messages")
    .map(
      (r) =>
        `${r.seq} ${r.kind} step=${r.step ?? "-"} dm=${allText(r).includes(DM)} last=${JSON.stringify(lastUserText(r).slice(0, 120))} reply=${JSON.stringify(r.reply ?? []).slice(0, 200)}`,
    );
  const journals: string[] = [];
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (p.includes("/opencode/cotal/") && e.name.endsWith(".jsonl")) journals.push(`--- ${p}\n${readFileSync(p, "utf8")}`);
    }
  };
  walk(join(project, ".cotal"));
  return `--- requests ---\n${asked.join("\n")}\n${journals.join("\n")}`;
}

beforeAll(async () => {
  await buildCli();
  project = await mkdtemp(join(tmpdir(), "cotal-opencode-events-"));
  model = await ModelDouble.start([
    // Bob's woken turn: the plugin handed the DM over; a text, then a call of Cotal's MCP tool.
    {
      when: (r) => allText(r).includes(DM) && lastUserText(r).includes(WAKE),
      reply: [LOOKING, { tool: DM_TOOL, input: { to: "alice", text: SECRET_ARG } }],
    },
    { afterToolResult: DM_TOOL, reply: [DONE] },
  ]);
  const home = join(project, "home");
  writeOpencodeConfig(home, model.url);
  // A space of its own: a connector's custody is per host and principal, and other meshes on this host may seat a bob too.
  shell = cleanEnv({ HOME: home, NATS_SERVER_BIN: findNatsServer(), OPENCODE_DISABLE_MODELS_FETCH: "1", COTAL_SPACE: `ocev-${process.pid}` });
  ok(await cotal(["up", "-d", "--port", String(await freePort())]));
  watcher = join(project, "watcher.creds");
  ok(await cotal(["mint", "watcher", "--profile", "observer", "--out", watcher]));
}, 180_000);

afterAll(async () => {
  if (project) await cotal(["down"]).catch(() => undefined);
  await model?.close();
  if (project) await rm(project, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
});

describe("an OpenCode seat's event plane", () => {
  it("a woken turn reaches events.local.bob: an observer sees it live and in history as one well-formed run; no tool arguments, results or mail", async () => {
    ok(await cotal(["spawn", "-d", "--agent", "opencode", "--name", "bob", "--wait-ms", "240000"]));
    // The observer watches before anything happens: what it sees of the turn comes live.
    const live = CotalProcess.spawn(["console", "--plain", "--agent", "bob", "--creds", watcher], { cwd: project, env: shell });
    try {
      await until(
        () => live.lines.some((l) => /^roster bob idle, runs opencode/.test(l)),
        60_000,
        () => `the console's roster line for bob\n${live.lines.join("\n")}`,
      );
      ok(await cotal(["send", "dm", "bob", DM, "--as", "alice", "--impersonate"]));
      try {
        await until(
          () => model.mainRequests.some((r) => toolResults(r).some((t) => t.name === DM_TOOL)),
          300_000,
          "bob's cotal_dm to return to his model",
          500,
        );
        await until(async () => (await frames()).some((f) => f.events.some((e) => e.type === "RUN_FINISHED")), 60_000, "bob's run finished on his plane", 500);
      } catch (err) {
        const requests = model.mainRequests.map((r) => lastUserText(r).slice(0, 200)).join("\n");
        throw new Error(
          `${(err as Error).message}\n--- ps ---\n${(await cotal(["ps"])).stdout}\n--- requests ---\n${requests}\n--- console ---\n${live.lines.join("\n")}`,
          {
            cause: err,
          },
        );
      }
      // Live (no [history] mark): the prompt, the tool call by name, the reply, the turn's end.
      for (const line of [
        /^\S+ bob « prompt: You have new Cotal mail/,
        /^\S+ bob ⚙ cotal_cotal_dm started/,
        /^\S+ bob » says: all done/,
        /^\S+ bob ■ turn finished/,
      ])
        await until(() => live.lines.some((l) => line.test(l)), 30_000, `${line} live in the console\n${live.lines.join("\n")}`);
    } finally {
      await live.stop("SIGTERM");
    }

    const got = await frames();
    // Ordered, gap-free frames from one writer.
    expect(got.map((f) => f.seq)).toEqual(got.map((_, i) => i + 1));
    const events = got.flatMap((f) => f.events.map((e) => ({ ...e, runId: (e as { runId?: string }).runId ?? f.runId })));
    expect(streamViolation(events)).toBeUndefined();
    const detail = `${JSON.stringify(events.map((e) => ({ type: e.type, delta: "delta" in e ? e.delta : undefined })))}\n${diagnosis()}`;
    // On a loaded host the manager may type its wake line a second time before OpenCode answers the
    // first (seen once): OpenCode answers the last, and the plane shows the first as a run of its
    // own that holds only that prompt. Any such run is the wake line alone; the answered one is the turn.
    const runs = [...new Set(events.map((e) => e.runId))].map((id) => events.filter((e) => e.runId === id));
    const turn = runs.find((r) => r.some((e) => e.type === "TOOL_CALL_START"));
    expect(turn, detail).toBeDefined();
    for (const r of runs.filter((x) => x !== turn)) {
      expect(
        r.map((e) => e.type),
        detail,
      ).toEqual(["RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED"]);
      expect(
        r.find((e) => e.type === "TEXT_MESSAGE_CONTENT"),
        detail,
      ).toMatchObject({ delta: expect.stringContaining(WAKE) });
    }
    // The same shape a Claude or Codex seat's one-tool turn has: the prompt, a text, the tool call, a text.
    expect(
      turn!.map((e) => e.type),
      detail,
    ).toEqual([...ONE_TOOL_TURN]);
    const texts = turn!.flatMap((e) => ("delta" in e ? [e.delta] : []));
    expect(texts[0], detail).toContain(WAKE);
    expect(texts.slice(1), detail).toEqual([LOOKING, DONE]);
    expect(turn!.find((e) => e.type === "TEXT_MESSAGE_START")).toMatchObject({ role: "user" });
    expect(turn!.find((e) => e.type === "TOOL_CALL_START")).toMatchObject({ toolCallName: DM_TOOL });
    // The call's arguments (the DM it sent), its result and the DM the plugin handed over are not on the plane.
    const plane = JSON.stringify(got);
    expect(plane).not.toContain("SECRET-ARGUMENT");
    expect(plane).not.toContain("alice");
    expect(plane).not.toContain(DM);

    // History, as a console started afterwards shows it.
    const later = CotalProcess.spawn(["console", "--plain", "--agent", "bob", "--creds", watcher], { cwd: project, env: shell });
    try {
      await until(
        () => later.lines.some((l) => /^\[history\] .* bob ⚙ cotal_cotal_dm started/.test(l)),
        30_000,
        () => `bob's tool call in history\n${later.lines.join("\n")}`,
      );
    } finally {
      await later.stop("SIGTERM");
    }
    const roster = ok(await cotal(["roster", "--json"])).json<Array<{ id: string; runtime?: string }>>();
    expect(roster.find((r) => r.id === "local.bob")).toMatchObject({ runtime: "opencode" });
    const ps = ok(await cotal(["ps"])).stdout;
    expect(ps).toMatch(/bob\s+opencode\s+joined\s/);
    expect(ps).not.toContain("no event plane");
  }, 900_000);
});

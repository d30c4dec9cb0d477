// The OpenCode event plane's source: Cotal's plugin journals a session as transcript
// records while OpenCode runs it. Driven here with what OpenCode 1.18.33 really emitted for one
// `opencode run` turn (a text, a bash call, a closing text; recorded by a logging plugin against the
// model double: fixtures/run-events.jsonl), through the plugin itself with a stand-in hook command,
// then the event plane's own mapper: one well-formed run with the tool call by name, the mail a
// hook handed over and the tool's argument and output nowhere.
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgUiMapper, streamViolation } from "../../connector/internal.js";
import { CotalPlugin } from "../../opencode/internal.js";
import { SessionJournal } from "../../runtime/opencode-family/index.js";
import { ONE_TOOL_TURN } from "../harness/agui-shapes.js";

type Recorded =
  { hook: "chat.message"; input: { sessionID: string }; output: never } | { hook: "event"; event: { type: string; properties?: Record<string, unknown> } };

const FIXTURE = join(import.meta.dirname, "fixtures", "run-events.jsonl");
const SESSION = "ses_dcc6c67abffeKSqNkYvafkFsTz";
const MAIL = "MAIL-TEXT handed over by the hook";
const recorded = (): Recorded[] =>
  readFileSync(FIXTURE, "utf8")
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l) as Recorded);

let dir: string;
const saved = { XDG_DATA_HOME: process.env.XDG_DATA_HOME, REC: process.env.COTAL_TEST_HOOK_REC };

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "cotal-opencode-journal-"));
  process.env.XDG_DATA_HOME = join(dir, "data");
  process.env.COTAL_TEST_HOOK_REC = join(dir, "hooks.jsonl");
  // A stand-in for the connector's hook command: records what it was told, hands mail over at SessionStart.
  writeFileSync(
    join(dir, "hook.mjs"),
    `import { appendFileSync, readFileSync } from "node:fs";
const event = process.argv[2];
appendFileSync(process.env.COTAL_TEST_HOOK_REC, JSON.stringify({ event, payload: JSON.parse(readFileSync(0, "utf8")) }) + "\\n");
if (event === "SessionStart") process.stdout.write(JSON.stringify({ hookSpecificOutput: { additionalContext: ${JSON.stringify(MAIL)} } }) + "\\n");
`,
  );
  chmodSync(join(dir, "hook.mjs"), 0o700);
});

afterAll(() => {
  for (const [k, v] of Object.entries({ XDG_DATA_HOME: saved.XDG_DATA_HOME, COTAL_TEST_HOOK_REC: saved.REC }))
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  rmSync(dir, { recursive: true, force: true });
});

/** The events the plane's mapper makes of a journal's records. */
function eventsOf(records: unknown[]): Array<{ type: string; runId?: string; [k: string]: unknown }> {
  const mapper = new AgUiMapper({ threadId: SESSION, openTools: [] });
  return records.flatMap((r) => mapper.map(r)).map(({ runId, event }) => ({ ...event, runId }));
}

describe("OpenCode's session journal (the event plane's source)", () => {
  it("a real 1.18.33 turn journaled by the plugin maps to one well-formed run: the prompt, texts, the bash call by name; no mail, argument or output", async () => {
    const hooks = await CotalPlugin({ directory: dir }, { node: process.execPath, hook: join(dir, "hook.mjs") });
    for (const r of recorded()) {
      if (r.hook === "chat.message") {
        const out = structuredClone((r as unknown as { output: Parameters<NonNullable<(typeof hooks)["chat.message"]>>[1] }).output);
        await hooks["chat.message"]!(r.input, out);
        // The hook's mail reached the prompt as a synthetic part (as before the journal).
        expect(out.parts.at(-1)).toMatchObject({ type: "text", text: MAIL, synthetic: true });
      } else await hooks.event!({ event: r.event });
    }
    const journal = join(dir, "data", "opencode", "cotal", `${SESSION}.jsonl`);
    expect(statSync(journal).mode & 0o777).toBe(0o600);
    expect(statSync(join(dir, "data", "opencode", "cotal")).mode & 0o777).toBe(0o700);
    // SessionStart names the journal as the session's transcript (the fixture holds no tool.execute.before).
    const told = readFileSync(process.env.COTAL_TEST_HOOK_REC!, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { event: string; payload: Record<string, unknown> });
    expect(told.map((t) => t.event)).toEqual(["UserPromptSubmit", "SessionStart", "Stop"]);
    expect(told[1]!.payload).toMatchObject({ session_id: SESSION, source: "startup", transcript_path: journal });

    const text = readFileSync(journal, "utf8");
    // The tool's argument and output, and the handed-over mail, are never written.
    expect(text).not.toContain("SECRETARG");
    expect(text).not.toContain("MAIL-TEXT");
    const events = eventsOf(
      text
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as unknown),
    );
    expect(streamViolation(events)).toBeUndefined();
    const detail = JSON.stringify(events, null, 1);
    expect(
      events.map((e) => e.type),
      detail,
    ).toEqual([...ONE_TOOL_TURN]);
    expect(events.flatMap((e) => ("delta" in e ? [e.delta] : []))).toEqual(["please run the thing\n", "let me look", "all done"]);
    expect(events.find((e) => e.type === "TOOL_CALL_START")).toMatchObject({ toolCallName: "bash", toolCallId: "toolu_e9fa27c329e49683f72bfd9b" });
  }, 30_000);

  it("a failed turn ends in RUN_ERROR; a text that never completed is still journaled before the end; a part after the end is not", () => {
    const j = new SessionJournal(() => new Date(0));
    const ev = (type: string, properties: Record<string, unknown>) => j.event({ type, properties: { sessionID: "s", ...properties } });
    const part = (p: Record<string, unknown>) => ev("message.part.updated", { part: { messageID: "m2", ...p } });
    const records = [
      ...j.prompt("s", "m1", "do it"),
      // A part of a message not known as the model's (the user's own text part) is not the model's text.
      ...ev("message.part.updated", { part: { id: "p0", messageID: "m1", type: "text", text: "do it", time: { end: 1 } } }),
      ...ev("message.updated", { info: { id: "m2", role: "assistant", parentID: "m1" } }),
      ...part({ id: "p1", type: "text", text: "half a sen" }),
      ...part({ id: "p2", type: "tool", tool: "read", callID: "c1", state: { status: "running", input: { filePath: "/SECRET" } } }),
      ...part({ id: "p2", type: "tool", tool: "read", callID: "c1", state: { status: "error", input: { filePath: "/SECRET" }, error: "SECRET" } }),
      ...j.turnEnded("s", "failed"),
      ...part({ id: "p3", type: "text", text: "late", time: { end: 2 } }),
    ];
    expect(JSON.stringify(records)).not.toContain("SECRET");
    const events = eventsOf(records);
    expect(streamViolation(events)).toBeUndefined();
    expect(events.map((e) => e.type)).toEqual([
      "RUN_STARTED",
      ...["TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END"],
      "TOOL_CALL_START",
      "TOOL_CALL_END",
      ...["TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END"],
      "RUN_ERROR",
    ]);
    expect(events.flatMap((e) => ("delta" in e ? [e.delta] : []))).toEqual(["do it", "half a sen"]);
    // A session with no turn journals no end.
    expect(j.turnEnded("other", "finished")).toEqual([]);
  });

  it("a prompt sent while OpenCode answers another does not cut that turn: it is journaled when its own answer starts", () => {
    const j = new SessionJournal(() => new Date(0));
    const ev = (type: string, properties: Record<string, unknown>) => j.event({ type, properties: { sessionID: "s", ...properties } });
    const text = (messageID: string, id: string, t: string) => ev("message.part.updated", { part: { id, messageID, type: "text", text: t, time: { end: 1 } } });
    const records = [
      ...j.prompt("s", "u1", "first"),
      ...ev("message.updated", { info: { id: "a1", role: "assistant", parentID: "u1" } }),
      ...ev("message.part.updated", { part: { id: "t1", messageID: "a1", type: "tool", tool: "bash", callID: "c1", state: { status: "running" } } }),
      // Typed mid-turn (the manager's wake line a second time): OpenCode takes it at once.
      ...j.prompt("s", "u2", "second"),
      ...j.prompt("s", "u3", "third"),
      ...ev("message.part.updated", { part: { id: "t1", messageID: "a1", type: "tool", tool: "bash", callID: "c1", state: { status: "completed" } } }),
      ...text("a1", "x1", "answer one"),
      // OpenCode answers the last of the waiting prompts; the one before it was folded in.
      ...ev("message.updated", { info: { id: "a3", role: "assistant", parentID: "u3" } }),
      ...text("a3", "x3", "answer three"),
      ...j.turnEnded("s", "finished"),
    ];
    const events = eventsOf(records);
    expect(streamViolation(events)).toBeUndefined();
    const runs = [...new Set(events.map((e) => e.runId))].map((id) => ({
      id,
      types: events.filter((e) => e.runId === id).map((e) => e.type),
      texts: events.filter((e) => e.runId === id).flatMap((e) => ("delta" in e ? [e.delta] : [])),
    }));
    const TEXT = ["TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END"];
    expect(runs).toEqual([
      { id: "u1", types: ["RUN_STARTED", ...TEXT, "TOOL_CALL_START", "TOOL_CALL_END", ...TEXT, "RUN_FINISHED"], texts: ["first", "answer one"] },
      { id: "u2", types: ["RUN_STARTED", ...TEXT, "RUN_FINISHED"], texts: ["second"] },
      { id: "u3", types: ["RUN_STARTED", ...TEXT, ...TEXT, "RUN_FINISHED"], texts: ["third", "answer three"] },
    ]);
  });
});

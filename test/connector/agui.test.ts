// The transcript → AG-UI mapping, pure: what each record becomes, what is never read, and the
// stream invariant (one open run, nothing outside a run, ids opened and closed in order).
import { describe, expect, it } from "vitest";
import { AgUiMapper, RUN_FAILED, streamViolation, type RunEvent } from "../../connector/internal.js";

const mapper = () => new AgUiMapper({ threadId: "s1", openTools: [] });
const flat = (evs: RunEvent[]) => evs.map((e) => ({ ...e.event, runId: "runId" in e.event ? e.event.runId : e.runId }));
const types = (evs: RunEvent[]) => evs.map((e) => e.event.type);

const prompt = (uuid: string, text = "hi") => ({ type: "user", uuid, message: { role: "user", content: text } });
const say = (uuid: string, text: string, stop?: string) => ({
  type: "assistant",
  uuid,
  message: { role: "assistant", content: [{ type: "text", text }], ...(stop ? { stop_reason: stop } : {}) },
});
const tool = (uuid: string, id: string) => ({
  type: "assistant",
  uuid,
  message: { role: "assistant", content: [{ type: "tool_use", id, name: "Edit", input: { file_path: "/etc/secret", new_string: "TOPSECRET" } }] },
});
const result = (uuid: string, id: string) => ({
  type: "user",
  uuid,
  message: { role: "user", content: [{ type: "tool_result", tool_use_id: id, content: "TOPSECRET written" }] },
  toolUseResult: { filePath: "/etc/secret" },
});

describe("transcript records to AG-UI events", () => {
  it("a turn opens a run, streams text, starts and ends the tool call without its input or result, and finishes on end_turn", () => {
    const m = mapper();
    const evs = [prompt("p1"), say("a1", "ok"), tool("a2", "t1"), result("r1", "t1"), say("a3", "done", "end_turn")].flatMap((r) => m.map(r));
    expect(types(evs)).toEqual([
      "RUN_STARTED",
      "TEXT_MESSAGE_START",
      "TEXT_MESSAGE_CONTENT",
      "TEXT_MESSAGE_END",
      "TEXT_MESSAGE_START",
      "TEXT_MESSAGE_CONTENT",
      "TEXT_MESSAGE_END",
      "TOOL_CALL_START",
      "TOOL_CALL_END",
      "TEXT_MESSAGE_START",
      "TEXT_MESSAGE_CONTENT",
      "TEXT_MESSAGE_END",
      "RUN_FINISHED",
    ]);
    expect(JSON.stringify(evs)).not.toMatch(/TOPSECRET|\/etc\/secret/);
    expect(evs.find((e) => e.event.type === "RUN_FINISHED")!.event).not.toHaveProperty("outcome");
    expect(m.state.runId).toBeUndefined();
  });

  it("an API error record ends the run with RUN_ERROR and the fixed message 'run failed'", () => {
    const m = mapper();
    const evs = [
      prompt("p1"),
      tool("a1", "t1"),
      {
        type: "assistant",
        uuid: "e1",
        isApiErrorMessage: true,
        message: { role: "assistant", content: [{ type: "text", text: "API Error: 529 overloaded, request id req_123" }] },
      },
    ].flatMap((r) => m.map(r));
    expect(types(evs).slice(-2)).toEqual(["TOOL_CALL_END", "RUN_ERROR"]);
    expect(evs.at(-1)!.event).toMatchObject({ message: RUN_FAILED, code: "failed" });
    expect(JSON.stringify(evs)).not.toContain("req_123");
  });

  it("a failed turn (StopFailure) closes with RUN_ERROR; a second close does nothing", () => {
    const m = mapper();
    m.map(prompt("p1"));
    expect(types(m.close("failed"))).toEqual(["RUN_ERROR"]);
    expect(m.close("finished")).toEqual([]);
  });

  it("a new prompt finishes a run that never saw its end; text outside a run opens one first", () => {
    const m = mapper();
    const evs = [say("a0", "resumed mid-turn"), prompt("p2"), say("a2", "x", "end_turn")].flatMap((r) => m.map(r));
    expect(types(evs)).toEqual([
      "RUN_STARTED",
      "TEXT_MESSAGE_START",
      "TEXT_MESSAGE_CONTENT",
      "TEXT_MESSAGE_END",
      "RUN_FINISHED",
      "RUN_STARTED",
      "TEXT_MESSAGE_START",
      "TEXT_MESSAGE_CONTENT",
      "TEXT_MESSAGE_END",
      "TEXT_MESSAGE_START",
      "TEXT_MESSAGE_CONTENT",
      "TEXT_MESSAGE_END",
      "RUN_FINISHED",
    ]);
    expect(streamViolation(flat(evs))).toBeUndefined();
  });

  it("sidechain, meta, compact-summary and non-message records publish nothing; long text is split into bounded deltas", () => {
    const m = mapper();
    expect(m.map({ ...prompt("x"), isSidechain: true })).toEqual([]);
    expect(m.map({ ...prompt("y"), isMeta: true })).toEqual([]);
    expect(m.map({ ...prompt("z"), isCompactSummary: true })).toEqual([]);
    expect(m.map({ type: "attachment", uuid: "a" })).toEqual([]);
    expect(m.map("not an object")).toEqual([]);
    const evs = m.map(prompt("p", "x".repeat(20_000)));
    expect(evs.filter((e) => e.event.type === "TEXT_MESSAGE_CONTENT").map((e) => (e.event as { delta: string }).delta.length)).toEqual([8_000, 8_000, 4_000]);
  });

  it("the invariant check catches a stream that breaks it", () => {
    expect(streamViolation([{ type: "TEXT_MESSAGE_START", messageId: "m" }])).toMatch(/outside a run/);
    expect(
      streamViolation([
        { type: "RUN_STARTED", runId: "a" },
        { type: "RUN_STARTED", runId: "b" },
      ]),
    ).toMatch(/while a is open/);
    expect(streamViolation([{ type: "RUN_STARTED", runId: "a" }, { type: "TOOL_CALL_START", toolCallId: "t" }, { type: "RUN_FINISHED" }])).toMatch(
      /still open/,
    );
    expect(
      streamViolation([
        { type: "RUN_STARTED", runId: "a" },
        { type: "TOOL_CALL_END", toolCallId: "t" },
      ]),
    ).toMatch(/not open/);
  });
});

// FrameFolder: an event plane's frames, in plane order, become what a person reads in `cotal
// console` and `cotal web` — a turn's edges, whole texts (even across frames), tool calls by name.
import { describe, expect, it } from "vitest";
import { FrameFolder, type AgUiEvent, type AgUiFrame } from "../../schemas/index.js";

let seq = 0;
function frame(events: AgUiEvent[], runId = "run1"): AgUiFrame {
  seq += 1;
  return { kind: "ag-ui.frame", protocol: "ag-ui", threadId: "t1", runId, epoch: 1, seq, events };
}

describe("FrameFolder", () => {
  it("a turn's start, finish and failure, at the event's own time or else the fallback", () => {
    const f = new FrameFolder();
    expect(f.fold(frame([{ type: "RUN_STARTED", timestamp: 5 }, { type: "RUN_FINISHED" }]), 9)).toEqual([
      { at: 5, runId: "run1", kind: "run-started" },
      { at: 9, runId: "run1", kind: "run-finished" },
    ]);
    expect(f.fold(frame([{ type: "RUN_ERROR", message: "budget reached" }], "run2"), 10)).toEqual([
      { at: 10, runId: "run2", kind: "run-failed", text: "budget reached" },
    ]);
    expect(f.fold(frame([{ type: "RUN_ERROR" }]), 11)).toEqual([{ at: 11, runId: "run1", kind: "run-failed", text: "run failed" }]);
  });

  it("a text is whole at its end, though its pieces came in several frames; a user's text is a prompt", () => {
    const f = new FrameFolder();
    expect(
      f.fold(
        frame([
          { type: "TEXT_MESSAGE_START", messageId: "m1", role: "user" },
          { type: "TEXT_MESSAGE_CONTENT", messageId: "m1", delta: "hel" },
        ]),
        1,
      ),
    ).toEqual([]);
    expect(
      f.fold(
        frame([
          { type: "TEXT_MESSAGE_CONTENT", messageId: "m1", delta: "lo" },
          { type: "TEXT_MESSAGE_END", messageId: "m1" },
        ]),
        2,
      ),
    ).toEqual([{ at: 2, runId: "run1", kind: "prompt", text: "hello" }]);
    f.fold(
      frame([
        { type: "TEXT_MESSAGE_START", messageId: "m2" },
        { type: "TEXT_MESSAGE_CONTENT", messageId: "m2", delta: "done" },
      ]),
      3,
    );
    expect(f.fold(frame([{ type: "TEXT_MESSAGE_END", messageId: "m2" }]), 4)).toEqual([{ at: 4, runId: "run1", kind: "reply", text: "done" }]);
    // Its end closed it: a second end for the same id shows nothing.
    expect(f.fold(frame([{ type: "TEXT_MESSAGE_END", messageId: "m2" }]), 5)).toEqual([]);
  });

  it("pieces of an unknown text, and an end without a start, show nothing", () => {
    const f = new FrameFolder();
    expect(
      f.fold(
        frame([
          { type: "TEXT_MESSAGE_CONTENT", messageId: "x", delta: "lost" },
          { type: "TEXT_MESSAGE_END", messageId: "x" },
        ]),
        1,
      ),
    ).toEqual([]);
  });

  it("a text keeps at most maxText characters, cut exactly there", () => {
    const f = new FrameFolder(5);
    f.fold(
      frame([
        { type: "TEXT_MESSAGE_START", messageId: "m", role: "assistant" },
        { type: "TEXT_MESSAGE_CONTENT", messageId: "m", delta: "abc" },
      ]),
      1,
    );
    f.fold(
      frame([
        { type: "TEXT_MESSAGE_CONTENT", messageId: "m", delta: "defgh" },
        { type: "TEXT_MESSAGE_CONTENT", messageId: "m", delta: "ij" },
      ]),
      2,
    );
    expect(f.fold(frame([{ type: "TEXT_MESSAGE_END", messageId: "m" }]), 3)).toEqual([{ at: 3, runId: "run1", kind: "reply", text: "abcde" }]);
  });

  it("a tool call by name: its end is named after its start, and forgotten after it", () => {
    const f = new FrameFolder();
    expect(f.fold(frame([{ type: "TOOL_CALL_START", toolCallId: "c1", toolCallName: "Bash" }]), 1)).toEqual([
      { at: 1, runId: "run1", kind: "tool-started", tool: "Bash" },
    ]);
    expect(f.fold(frame([{ type: "TOOL_CALL_END", toolCallId: "c1" }]), 2)).toEqual([{ at: 2, runId: "run1", kind: "tool-ended", tool: "Bash" }]);
    expect(f.fold(frame([{ type: "TOOL_CALL_END", toolCallId: "c1" }]), 3)).toEqual([{ at: 3, runId: "run1", kind: "tool-ended", tool: "tool" }]);
    expect(f.fold(frame([{ type: "TOOL_CALL_START", toolCallId: "c2" }]), 4)).toEqual([{ at: 4, runId: "run1", kind: "tool-started", tool: "tool" }]);
  });
});

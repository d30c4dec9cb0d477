// The event plane's names and frames: the channel-like name of a principal's plane and back, and
// the one frame a message carries (a part that does not conform is skipped, never trusted).
import { describe, expect, it } from "vitest";
import { AGUI_FRAME_KIND, eventPlaneOf, eventsChannelOf, frameOf, withArticle } from "../../schemas/index.js";

/** Parts as a message holds them: frameOf sees only each part's kind until one is a frame. */
const parts = (...ps: object[]) => ps as { kind: string }[];
const frame = { kind: AGUI_FRAME_KIND, protocol: "ag-ui", threadId: "t", runId: "r", epoch: 1, seq: 1, events: [{ type: "RUN_STARTED" }] };

describe("frameOf", () => {
  it("finds the frame among other parts", () => {
    expect(frameOf(parts({ kind: "text", text: "hi" }, frame))).toMatchObject({ seq: 1, runId: "r" });
  });

  it("skips a frame part that does not conform, and finds none where there is none", () => {
    expect(frameOf(parts({ ...frame, seq: 0 }))).toBeUndefined();
    expect(frameOf(parts({ ...frame, seq: 0 }, { ...frame, seq: 2 }))?.seq).toBe(2);
    expect(frameOf([{ kind: "text" }])).toBeUndefined();
    expect(frameOf([])).toBeUndefined();
  });
});

describe("event plane names", () => {
  it("events.<owner>.<actor>, read back exactly", () => {
    expect(eventsChannelOf({ owner: "local", actor: "bob" })).toBe("events.local.bob");
    expect(eventPlaneOf("events.local.bob")).toEqual({ owner: "local", actor: "bob" });
  });

  it("any other name is not a plane: other words, other depths, tokens that are not names", () => {
    for (const name of ["general", "events", "events.local", "events.local.bob.x", "event.local.bob", "events.lo-cal.bob", "events.local.b*b", "events..bob"])
      expect(eventPlaneOf(name), name).toBeUndefined();
  });
});

describe("withArticle", () => {
  it("a vowel letter takes an, whatever its case; any other letter a", () => {
    expect(withArticle("agent")).toBe("an agent");
    expect(withArticle("Observer")).toBe("an Observer");
    expect(withArticle("reader")).toBe("a reader");
    expect(withArticle("person")).toBe("a person");
  });
});

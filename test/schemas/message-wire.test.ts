// Messages on the wire: the 256 KiB limit on both sides (encode and decode), and what a decoded
// message must hold.
import { describe, expect, it } from "vitest";
import { CotalMessage, decodeMessage, describeIssues, encodeMessage, LIMITS, messageText, PayloadTooLargeError, ValidationError } from "../../schemas/index.js";

describe("messages on the wire", () => {
  const base = { id: "m1", ts: 1_767_225_600_000, space: "demo", from: { id: "local.alice", name: "alice" }, channel: "g" };
  /** A message whose encoding is exactly `bytes` long. */
  function ofSize(bytes: number): CotalMessage {
    const empty = encodeMessage(CotalMessage.parse({ ...base, parts: [{ kind: "text", text: "" }] })).byteLength;
    return CotalMessage.parse({ ...base, parts: [{ kind: "text", text: "x".repeat(bytes - empty) }] });
  }

  it("exactly 256 KiB encodes and decodes; one byte more is refused both ways", () => {
    const max = ofSize(LIMITS.maxMessageBytes);
    const bytes = encodeMessage(max);
    expect(bytes.byteLength).toBe(LIMITS.maxMessageBytes);
    expect(decodeMessage(bytes)).toEqual(max);
    const over = ofSize(LIMITS.maxMessageBytes + 1);
    expect(() => encodeMessage(over)).toThrow(PayloadTooLargeError);
    const raw = new TextEncoder().encode(JSON.stringify(over));
    expect(raw.byteLength).toBe(LIMITS.maxMessageBytes + 1);
    const err = (() => {
      try {
        decodeMessage(raw);
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(PayloadTooLargeError);
    expect(err).toMatchObject({ code: "payload-too-large", size: LIMITS.maxMessageBytes + 1, limit: LIMITS.maxMessageBytes });
  });

  it("an invalid message is refused before encoding, naming the field", () => {
    expect(() => encodeMessage({ ...base, id: "has space", parts: [{ kind: "text", text: "x" }] } as CotalMessage)).toThrow(ValidationError);
    expect(() => encodeMessage({ ...base, id: "has space", parts: [{ kind: "text", text: "x" }] } as CotalMessage)).toThrow(
      /Invalid message: id: id must not contain whitespace\./,
    );
  });

  it("JSON that is not JSON is a validation error that keeps its cause", () => {
    try {
      decodeMessage(new TextEncoder().encode("{nope"));
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(ValidationError);
      expect(e).toMatchObject({ code: "invalid-input", what: "message", issues: ["payload is not valid JSON"] });
      expect((e as Error).cause).toBeInstanceOf(SyntaxError);
    }
  });

  it("issues are described with their path, or alone at the top", () => {
    const r = CotalMessage.safeParse({ ...base, parts: [] });
    expect(describeIssues(r.error!)).toEqual([expect.stringMatching(/^parts: /)]);
    const top = CotalMessage.safeParse({ ...base, to: "local.bob", parts: [{ kind: "text", text: "x" }] });
    expect(describeIssues(top.error!)).toEqual(["exactly one of channel, to or toService must be set"]);
  });

  it("messageText joins the text parts only", () => {
    expect(
      messageText({
        parts: [
          { kind: "text", text: "a" },
          { kind: "data", data: { text: "not me" } },
          { kind: "text", text: "b" },
        ],
      }),
    ).toBe("a\nb");
    expect(messageText({ parts: [{ kind: "data", data: 1 }] })).toBe("");
  });
});

// Peer text made safe to print: no control, C1 or bidirectional character reaches a terminal or a
// log raw, whether the log line is printed as it is or parsed first.
import { describe, expect, it } from "vitest";
import { escapeChar, neutralizeLogLine, oneLine, UNSAFE_CHARS, UNSAFE_IN_JSON } from "../../schemas/index.js";

const C1_CSI = "\u009b";
const BIDI = ["\u061c", "\u200e", "\u200f", "\u202a", "\u202e", "\u2066", "\u2069"];

describe("oneLine", () => {
  it("newline, tab and carriage return as their escapes, other controls as \\uXXXX", () => {
    expect(oneLine("a\nb\tc\rd")).toBe("a\\nb\\tc\\rd");
    expect(oneLine("\u001b[31mred")).toBe("\\u001b[31mred");
    expect(oneLine("\u0000\u007f" + C1_CSI)).toBe("\\u0000\\u007f\\u009b");
    expect(oneLine("\u2028\u2029")).toBe("\\u2028\\u2029");
  });

  it("every bidirectional control is escaped; ordinary text and other Unicode are kept", () => {
    for (const c of BIDI) expect(oneLine(`x${c}y`)).toBe(`x${escapeChar(c)}y`);
    expect(oneLine("héllo wörld — ✓ 日本")).toBe("héllo wörld — ✓ 日本");
    expect(oneLine(" ~")).toBe(" ~");
  });

  it("the set's edges: U+001F and U+0080–U+009F unsafe, U+0020 and U+00A0 safe", () => {
    expect(oneLine("\u001f")).toBe("\\u001f");
    expect(oneLine("\u0080")).toBe("\\u0080");
    expect(oneLine("\u009f")).toBe("\\u009f");
    expect(oneLine("\u00a0")).toBe("\u00a0");
    expect(oneLine("\u200d\u2067")).toBe("\u200d\\u2067");
  });
});

describe("escapeChar", () => {
  it("four lowercase hex digits, zero padded", () => {
    expect(escapeChar("\u0007")).toBe("\\u0007");
    expect(escapeChar("\u202e")).toBe("\\u202e");
  });
});

describe("neutralizeLogLine", () => {
  it("a JSON log line keeps no unsafe character even after JSON.parse", () => {
    const raw = JSON.stringify({ msg: `peer ${C1_CSI}31m ${BIDI.join("")} \u2028 done`, key: "a\u001bb" });
    const line = neutralizeLogLine(raw);
    expect(line).not.toMatch(UNSAFE_CHARS);
    const parsed = JSON.parse(line) as { msg: string; key: string };
    expect(parsed.msg).toBe(`peer \\u009b31m ${BIDI.map(escapeChar).join("")} \\u2028 done`);
    expect(parsed.msg).not.toMatch(UNSAFE_IN_JSON);
    // C0 controls are JSON's to escape, and stay as it wrote them.
    expect(parsed.key).toBe("a\u001bb");
  });

  it("a line without such characters is unchanged", () => {
    const raw = JSON.stringify({ level: 30, msg: "joined general" });
    expect(neutralizeLogLine(raw)).toBe(raw);
  });
});

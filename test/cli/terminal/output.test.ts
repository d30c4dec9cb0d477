// Peer text on the terminal: one line, every control, C1, bidi and separator character escaped, and
// --json output that parses back to the same text.
import { describe, expect, it } from "vitest";
import { oneLine, safeLines, terminalSafeJson } from "../../../cli/terminal/output.js";

/** Every character a terminal must never get raw from a peer. */
const HOSTILE = "a\u202eb\u2028c\u2029d\u0085e\u007ff\u009bg\u001b[31mh\u200fi\u2066j\u061ck\u0000l";
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const RAW = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

describe("terminal output", () => {
  it("peer text shows bidi overrides, line separators, C0/C1 controls and DEL as \\u escapes, on one line", () => {
    const line = oneLine(HOSTILE + "\nnext");
    expect(line).not.toMatch(RAW);
    expect(line).not.toContain("\n");
    expect(line).toBe("a\\u202eb\\u2028c\\u2029d\\u0085e\\u007ff\\u009bg\\u001b[31mh\\u200fi\\u2066j\\u061ck\\u0000l\\nnext");
    expect(oneLine(line)).toBe(line); // framing twice changes nothing
    expect(oneLine("emoji 👩‍💻 and accents é stay")).toBe("emoji 👩‍💻 and accents é stay");
    expect(safeLines("first\u202e\nsecond")).toBe("first\\u202e\nsecond");
  });

  it("--json escapes DEL, C1, line separators and bidi controls, and parses back to the same text", () => {
    const value = { text: HOSTILE, nested: [{ name: "x\u007f" }] };
    for (const json of [terminalSafeJson(value), terminalSafeJson(value, 2)]) {
      expect(json).not.toMatch(RAW);
      expect(json).toContain("\\u007f");
      expect(json).toContain("\\u0085");
      expect(json).toContain("\\u202e");
      expect(JSON.parse(json)).toEqual(value);
    }
  });
});

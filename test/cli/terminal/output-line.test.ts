// Peer text cannot break out of its line.
import { describe, expect, it } from "vitest";
import { oneLine } from "../../../cli/terminal/output.js";

describe("terminal output", () => {
  it("peer text cannot break out of its line or send terminal escapes", () => {
    expect(oneLine("a\nb\tc\u001b[31m\u009b")).toBe("a\\nb\\tc\\u001b[31m\\u009b");
  });
});

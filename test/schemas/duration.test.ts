// Durations as people type them and as Cotal prints them.
import { describe, expect, it } from "vitest";
import { formatDuration, parseDuration, ValidationError } from "../../schemas/index.js";

describe("durations", () => {
  it.each([
    ["250", 250],
    ["250ms", 250],
    ["90s", 90_000],
    ["15m", 900_000],
    ["2h", 7_200_000],
    ["7d", 604_800_000],
    ["1w", 604_800_000],
    ["1.5s", 1_500],
    [" 30s ", 30_000],
  ])("%j is %d ms", (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });
  it.each(["", "s", "1.s", "1.xs", "x1s", "1sx", "-1s", "1 s", "1y"])("%j is refused", (text) => {
    expect(() => parseDuration(text, "--since")).toThrow(ValidationError);
    expect(() => parseDuration(text, "--since")).toThrow(/Invalid --since: .* is not a duration/);
  });
  it.each([
    [604_800_000 * 2, "14d"],
    [86_400_000, "1d"],
    [7_200_000, "2h"],
    [5_400_000, "90m"],
    [90_000, "90s"],
    [1_000, "1s"],
    [1_500, "1.5s"],
    [999, "999ms"],
    [0, "0ms"],
    [61_500, "61.5s"],
  ])("%d ms formats as %s", (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });
});

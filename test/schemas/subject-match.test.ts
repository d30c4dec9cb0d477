// The wildcard matcher the permission tests hold patterns with: `*` is exactly one token, `>`
// one or more, and a pattern never matches a subject longer or shorter than itself otherwise.
import { describe, expect, it } from "vitest";
import { subjectMatches } from "../../schemas/index.js";

describe("subjectMatches", () => {
  it.each([
    ["a.b.c", "a.b.c", true],
    ["a.*.c", "a.b.c", true],
    ["a.>", "a.b", true],
    ["a.>", "a.b.c.d", true],
    ["a.>", "a", false],
    ["a.*", "a", false],
    ["a.*", "a.b.c", false],
    ["a.b", "a.b.c", false],
    ["a.b.c", "a.b", false],
    ["a.b", "a.c", false],
    [">", "a", true],
    ["*", "a.b", false],
  ])("%s matches %s: %s", (pattern, subject, expected) => {
    expect(subjectMatches(pattern, subject)).toBe(expected);
  });
});

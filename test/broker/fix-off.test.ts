// The fault suite's fix switches (broker/fix-off.ts): COTAL_FIX_OFF names the fixes switched off,
// an unknown name is refused rather than ignored (a typo must not pass for a fix switched off), and
// a process that reads one switched off says so.
import { describe, expect, it } from "vitest";
import { fixesOff, fixOff, UnknownFixError } from "../../broker/internal.js";
import type { Logger } from "../../broker/index.js";

describe("fix switches", () => {
  it("reads the fixes switched off, and none when unset or empty", () => {
    expect([...fixesOff({ COTAL_FIX_OFF: "adoption, restart" })].sort()).toEqual(["adoption", "restart"]);
    expect(fixesOff({}).size).toBe(0);
    expect(fixesOff({ COTAL_FIX_OFF: " " }).size).toBe(0);
  });

  it("refuses a name that is no switchable fix, naming the known ones", () => {
    expect(() => fixesOff({ COTAL_FIX_OFF: "adoptoin" })).toThrow(UnknownFixError);
    expect(() => fixesOff({ COTAL_FIX_OFF: "adoptoin" })).toThrow(/known: adoption, restart/);
  });

  it("logs a fix found switched off at error level", () => {
    const said: unknown[][] = [];
    const log = { error: (...a: unknown[]) => said.push(a) } as unknown as Logger;
    expect(fixOff("restart", log, { COTAL_FIX_OFF: "restart" })).toBe(true);
    expect(fixOff("adoption", log, { COTAL_FIX_OFF: "restart" })).toBe(false);
    expect(said.length).toBe(1);
    expect(JSON.stringify(said[0])).toMatch(/for the fault suite only/);
  });
});

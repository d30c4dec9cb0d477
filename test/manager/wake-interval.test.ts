// How soon the manager may type another wake into a seat still idle with mail (live-seat.ts's
// wakeIfDue): 15 s for a runtime whose TUI queues a second prompt harmlessly, longer for OpenCode,
// where a wake typed while the first prompt's hooks still run starts a second session.
import { describe, expect, it } from "vitest";
import { RUNTIMES } from "../../runtimes/index.js";
import { WAKE_EVERY_MS, wakeDue } from "../../runtime/index.js";

const T0 = 1_000_000;

describe("the re-wake interval", () => {
  it("a seat not woken since it last worked may be woken at once, on every runtime", () => {
    for (const r of RUNTIMES) expect(wakeDue(undefined, T0, r), r.name).toBe(true);
  });

  it.each(RUNTIMES.map((r) => [r.name, r] as const))("%s: never twice within 15 s, and again once its own interval passed", (_name, r) => {
    const every = Math.max(WAKE_EVERY_MS, r.rewakeAfterMs ?? 0);
    expect(wakeDue(T0, T0 + WAKE_EVERY_MS - 1, r)).toBe(false);
    expect(wakeDue(T0, T0 + every - 1, r)).toBe(false);
    expect(wakeDue(T0, T0 + every, r)).toBe(true);
  });

  it("OpenCode waits a minute before typing a second wake (the first may still be starting its session)", () => {
    const opencode = RUNTIMES.find((r) => r.name === "opencode")!;
    expect(wakeDue(T0, T0 + WAKE_EVERY_MS, opencode)).toBe(false);
    expect(wakeDue(T0, T0 + 59_999, opencode)).toBe(false);
    expect(wakeDue(T0, T0 + 60_000, opencode)).toBe(true);
    const claude = RUNTIMES.find((r) => r.name === "claude")!;
    expect(wakeDue(T0, T0 + WAKE_EVERY_MS, claude)).toBe(true);
  });
});

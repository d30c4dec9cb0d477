// Log lines for people: short, no stacks unless --debug, a repeat once a minute, and an error said
// once.
import { describe, expect, it } from "vitest";
import { HeldErrors, humanLine, onceAMinute, withoutStacks } from "../../../cli/terminal/logging.js";

describe("log lines for people", () => {
  const line = JSON.stringify({
    level: 50,
    component: "endpoint",
    msg: "presence write failed",
    err: { message: "timeout", stack: "Error: timeout\n    at x (y.js:1:1)" },
  });

  it("text: one short line, the stack only with --debug", () => {
    expect(humanLine(line)).toBe("cotal: error: presence write failed: timeout\n");
    expect(humanLine(line, true)).toContain("    at x (y.js:1:1)");
  });

  it("json: the same record without its stacks", () => {
    const parsed = JSON.parse(withoutStacks(line)) as { err: Record<string, unknown> };
    expect(parsed.err).toEqual({ message: "timeout" });
  });

  it("the same complaint passes once a minute, another at once", () => {
    let now = 0;
    const once = onceAMinute(() => now);
    expect(once(line)).toBe(true);
    now = 2_000;
    expect(once(line)).toBe(false);
    expect(once(JSON.stringify({ level: 40, component: "endpoint", msg: "ack failed" }))).toBe(true);
    now = 61_000;
    expect(once(line)).toBe(true);
  });
});

describe("an error said once", () => {
  const refusal = (subject: string) =>
    JSON.stringify({
      level: 50,
      msg: "the broker refused an operation of this endpoint",
      subject,
      err: { message: `refused ${subject}: Permissions Violation` },
    });

  it("an error line of the failure the command reports is dropped; another is written; warnings never wait", () => {
    const written: string[] = [];
    const held = new HeldErrors((l) => written.push(l), 60_000);
    expect(held.offer(JSON.stringify({ level: 40, msg: "presence write failed", err: { message: "timeout" } }))).toBe(false);
    expect(held.offer(JSON.stringify({ level: 50, msg: "no err field" }))).toBe(false);
    expect(held.offer(refusal("cotal.s.chat.local.a.secret"))).toBe(true);
    expect(held.offer(refusal("cotal.s.chat.local.a.other"))).toBe(true);
    const reported = Object.assign(new Error("may not publish"), {
      cause: Object.assign(new Error("Permissions Violation"), { subject: "cotal.s.chat.local.a.secret" }),
    });
    held.settle(reported);
    expect(written).toEqual([refusal("cotal.s.chat.local.a.other")]);
  });

  it("a held line whose error message starts the reported one's (pino appends causes) is the same failure", () => {
    const written: string[] = [];
    const held = new HeldErrors((l) => written.push(l), 60_000);
    held.offer(JSON.stringify({ level: 50, msg: "join failed; undone", err: { message: "join: not allowed: Permissions Violation" } }));
    held.settle(new Error("join: not allowed"));
    expect(written).toEqual([]);
  });
});

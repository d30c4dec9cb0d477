// Warnings a peer can cause once per message are sampled per source and reason (broker/log-sampler.ts):
// the first is written, the rest counted, one summary line per interval says how many. Asserted on
// the lines a real pino logger writes, parsed as objects.
import { afterEach, describe, expect, test } from "vitest";
import { LogSampler, logger, setLogDestination } from "../../broker/internal.js";

afterEach(() => setLogDestination(undefined));

function capture(): Array<Record<string, unknown>> {
  const lines: Array<Record<string, unknown>> = [];
  setLogDestination({ write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
  return lines;
}

describe("sampled warnings", () => {
  test("a flood from one source is its first warning and one summary per interval with the count", () => {
    const lines = capture();
    let now = 1_000;
    const s = new LogSampler(logger("sampler-test"), { intervalMs: 10_000, now: () => now });
    for (let i = 0; i < 5_000; i++) s.warn("local.mallory", "beat-malformed", { subject: "cotal.s.beat.local.mallory", n: i }, "dropped a malformed beat");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 40, msg: "dropped a malformed beat", source: "local.mallory", reason: "beat-malformed", n: 0 });

    s.flush(); // not an interval yet: nothing
    expect(lines).toHaveLength(1);
    now += 10_000;
    s.flush();
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatchObject({ level: 40, source: "local.mallory", reason: "beat-malformed", dropped: 4_999, intervalMs: 10_000 });
    expect(lines[1]!.msg).toMatch(/^dropped a malformed beat \(and 4999 more/);

    // The flood goes on: still counted, one summary for the next interval.
    for (let i = 0; i < 300; i++) s.warn("local.mallory", "beat-malformed", {}, "dropped a malformed beat");
    now += 10_000;
    s.flush();
    expect(lines).toHaveLength(3);
    expect(lines[2]).toMatchObject({ dropped: 300 });

    // Quiet for an interval: forgotten, so the next one is written in full again.
    now += 10_000;
    s.flush();
    expect(lines).toHaveLength(3);
    s.warn("local.mallory", "beat-malformed", { n: "again" }, "dropped a malformed beat");
    expect(lines).toHaveLength(4);
    expect(lines[3]).toMatchObject({ n: "again" });
    s.stop();
  });

  test("each source and each reason is sampled on its own; a bystander's first warning is never swallowed", () => {
    const lines = capture();
    const s = new LogSampler(logger("sampler-test"), { intervalMs: 60_000 });
    for (let i = 0; i < 100; i++) s.warn("local.mallory", "beat-malformed", {}, "dropped a malformed beat");
    s.warn("local.mallory", "control-reply-not-inbox", {}, "control request with a reply subject that is not an inbox; dropped unexecuted");
    s.warn("local.bob", "beat-malformed", {}, "dropped a malformed beat");
    s.error("local.bob", "control-handler-failed-ping", {}, "control handler failed");
    expect(lines.map((l) => [l.source, l.reason, l.level])).toEqual([
      ["local.mallory", "beat-malformed", 40],
      ["local.mallory", "control-reply-not-inbox", 40],
      ["local.bob", "beat-malformed", 40],
      ["local.bob", "control-handler-failed-ping", 50],
    ]);
    // stop() writes what is still counted.
    s.stop();
    expect(lines).toHaveLength(5);
    expect(lines[4]).toMatchObject({ source: "local.mallory", reason: "beat-malformed", dropped: 99 });
  });

  test("past maxKeys sources, new ones are sampled together as *: memory stays bounded whatever names arrive", () => {
    const lines = capture();
    const s = new LogSampler(logger("sampler-test"), { maxKeys: 3, intervalMs: 60_000 });
    for (let i = 0; i < 1_000; i++) s.warn(`local.n${i}`, "beat-malformed", {}, "dropped a malformed beat");
    expect(lines.map((l) => l.source)).toEqual(["local.n0", "local.n1", "local.n2", "*"]);
    s.stop();
    expect(lines.at(-1)).toMatchObject({ source: "*", dropped: 996 });
  });

  test("by default a window is 10 s and 1,000 sources are tracked (docs/security.md, Floods)", () => {
    const lines = capture();
    let now = 0;
    const s = new LogSampler(logger("sampler-test"), { now: () => now });
    for (let i = 0; i < 1_001; i++) s.warn(`local.n${i}`, "beat-malformed", {}, "dropped a malformed beat");
    s.warn("local.n0", "beat-malformed", {}, "dropped a malformed beat");
    expect(lines.map((l) => l.source).slice(-2)).toEqual(["local.n999", "*"]);
    now = 9_999;
    s.flush();
    expect(lines).toHaveLength(1_001);
    now = 10_000;
    s.flush();
    expect(lines.at(-1)).toMatchObject({ source: "local.n0", dropped: 1, intervalMs: 10_000 });
    s.stop();
  });
});

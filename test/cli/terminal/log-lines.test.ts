// cotal logs lines: pino records, nats-server lines and anything else, for people and as JSON.
import { describe, expect, it } from "vitest";
import { logLineAsJson, logLineForPeople, parseLogLine } from "../../../cli/terminal/logging.js";

describe("cotal logs lines", () => {
  it("reads pino records, nats-server lines and anything else", () => {
    const pino = parseLogLine(JSON.stringify({ level: 30, time: 1_000, pid: 7, component: "mesh-service", msg: "registered", who: "local.gina" }));
    expect(pino).toEqual({ time: 1_000, level: 30, component: "mesh-service", msg: "registered", fields: { pid: 7, who: "local.gina" } });
    const nats = parseLogLine('[10164] 2026/12/01 15:33:23.826449 [ERR] 127.0.0.1:40354 - Publish Violation - Subject "x"');
    expect(nats).toMatchObject({ level: 50, component: "nats-server", msg: '127.0.0.1:40354 - Publish Violation - Subject "x"' });
    expect(new Date(nats.time!).getMinutes()).toBe(33);
    expect(parseLogLine("Node.js v20.20.2")).toEqual({ msg: "Node.js v20.20.2", fields: {} });
  });

  it("for people: time, level, component, message with its error, fields; control characters escaped", () => {
    const e = parseLogLine(
      JSON.stringify({ level: 40, time: 1_000, pid: 1, component: "endpoint", msg: "ack \u001b[2J", err: { message: "gone\u009b" }, to: "a b", n: 3 }),
    );
    const line = logLineForPeople(e);
    expect(line).toMatch(/^\d\d:\d\d:\d\d {2}warning {2}endpoint {2}ack \\u001b\[2J: gone\\u009b {2}to="a b" {2}n=3$/);
    expect(logLineForPeople(parseLogLine("\u001b]0;title\u0007"))).toBe("\\u001b]0;title\\u0007");
  });

  it("as JSON: pino's shape with the log's name, escaped like every JSON output", () => {
    const json = logLineAsJson(parseLogLine("[1] 2026/12/01 15:33:23.8 [WRN] slow \u202e"), "nats-server");
    expect(json).toContain("\\u202e");
    expect(JSON.parse(json)).toMatchObject({ level: 40, log: "nats-server", component: "nats-server", msg: "slow \u202e" });
  });
});

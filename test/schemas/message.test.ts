import { describe, expect, it } from "vitest";
import {
  CotalMessage,
  decodeMessage,
  durables,
  encodeMessage,
  LIMITS,
  localPrincipal,
  parseDuration,
  PayloadTooLargeError,
  ValidationError,
} from "../../schemas/index.js";

const base = {
  id: "m1",
  ts: 0,
  space: "demo",
  from: { id: "local.alice", name: "alice" },
  parts: [{ kind: "text", text: "hi" }],
};

describe("CotalMessage", () => {
  it("accepts each part kind, including a reverse-DNS extension", () => {
    const m = CotalMessage.parse({
      ...base,
      channel: "general",
      parts: [
        { kind: "text", text: "hello" },
        { kind: "data", data: { a: [1, 2] } },
        { kind: "artifact", name: "report.pdf", mediaType: "application/pdf", digest: `sha256:${"a".repeat(64)}`, size: 10 },
        { kind: "ag-ui.frame", data: { type: "RUN_STARTED" } },
      ],
    });
    expect(m.parts).toHaveLength(4);
  });
  it("requires exactly one of channel, to and toService", () => {
    expect(CotalMessage.safeParse(base).success).toBe(false);
    expect(CotalMessage.safeParse({ ...base, channel: "general", to: "local.bob" }).success).toBe(false);
    expect(CotalMessage.safeParse({ ...base, toService: "reviewer" }).success).toBe(true);
  });
  it("ignores unknown fields", () => {
    const m = CotalMessage.parse({ ...base, channel: "general", future: 1 });
    expect("future" in m).toBe(false);
  });
  it("refuses an unknown part kind that is not reverse-DNS", () => {
    expect(CotalMessage.safeParse({ ...base, channel: "general", parts: [{ kind: "video" }] }).success).toBe(false);
  });
  it("round-trips through the wire encoding", () => {
    const m = CotalMessage.parse({ ...base, to: "local.bob" });
    expect(decodeMessage(encodeMessage(m))).toEqual(m);
  });
  it("refuses oversize messages, naming the limit", () => {
    const m = CotalMessage.parse({ ...base, channel: "g", parts: [{ kind: "text", text: "x".repeat(LIMITS.maxMessageBytes) }] });
    expect(() => encodeMessage(m)).toThrow(PayloadTooLargeError);
    expect(() => encodeMessage(m)).toThrow(new RegExp(`limit of ${LIMITS.maxMessageBytes} bytes`));
  });
  it("reports malformed JSON on the wire as a validation error", () => {
    expect(() => decodeMessage(new TextEncoder().encode("{nope"))).toThrow(ValidationError);
    expect(() => decodeMessage(new TextEncoder().encode('{"id":""}'))).toThrow(/Invalid message/);
  });
});

describe("durable names and durations", () => {
  it("names durables in the dash form, channels by digest", () => {
    const p = localPrincipal("alice");
    expect(durables.dm(p)).toBe("dm_local-alice");
    expect(durables.dm(p, "a".repeat(26))).toBe(`dm_local-alice-${"a".repeat(26)}`);
    expect(durables.anycast("reviewer")).toBe("svc_reviewer");
    expect(durables.channel(p, "team.backend")).toMatch(/^ch_local-alice-[0-9a-f]{12}$/);
    expect(durables.channel(p, "team.backend")).not.toBe(durables.channel(p, "team_backend"));
    expect(() => durables.dm(p, "UPPER")).toThrow(/lifecycle uid/);
  });
  it("parses durations and refuses nonsense", () => {
    expect(parseDuration("1h")).toBe(3_600_000);
    expect(parseDuration("24h")).toBe(86_400_000);
    expect(parseDuration("90s")).toBe(90_000);
    expect(() => parseDuration("soon")).toThrow(/30s, 15m, 1h/);
  });
});

// The small pieces of the contract, each pinned exactly: stream and bucket names, principal
// ids, durable names with a lifecycle uid, the 256 KiB limit on both sides of the wire, the
// errors' codes and remedies, and durations (once survivors of mutation testing).
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  assertChannel,
  assertToken,
  CotalError,
  CotalMessage,
  decodeMessage,
  describeIssues,
  durables,
  encodeMessage,
  filters,
  formatDuration,
  InvalidTokenError,
  LIMITS,
  localPrincipal,
  messageText,
  names,
  parseDuration,
  parsePrincipal,
  PayloadTooLargeError,
  principal,
  principalDashed,
  principalId,
  ValidationError,
} from "../../schemas/index.js";

const alice = localPrincipal("alice");
const uid = "abcdefghijklmnopqrstuvwxyz";

describe("names of a space's streams and buckets", () => {
  it("are fixed by the space", () => {
    expect(names.chatStream("demo")).toBe("CHAT_demo");
    expect(names.dmStream("demo")).toBe("DM_demo");
    expect(names.taskStream("demo")).toBe("TASK_demo");
    expect(names.seatsStream("demo")).toBe("SEATS_demo");
    expect(names.presenceBucket("demo")).toBe("cotal_presence_demo");
    expect(names.channelsBucket("demo")).toBe("cotal_channels_demo");
    expect(names.membersBucket("demo")).toBe("cotal_members_demo");
    expect(names.managersBucket("demo")).toBe("cotal_managers_demo");
    expect(names.xferStream("demo", "m1")).toBe("XFER_demo_m1");
  });
  it("refuse a space or instance that is not a token", () => {
    for (const f of [
      names.chatStream,
      names.dmStream,
      names.taskStream,
      names.seatsStream,
      names.presenceBucket,
      names.channelsBucket,
      names.membersBucket,
      names.managersBucket,
    ]) {
      expect(() => f("a.b")).toThrow(/Invalid space "a.b"/);
    }
    expect(() => names.xferStream("demo", "m.1")).toThrow(/Invalid instance "m.1"/);
  });
  it("filters for control calls and a seat's log", () => {
    expect(filters.control("demo", "mesh", "one", "join")).toBe("cotal.demo.ep.mesh.one.join.*.*");
    expect(() => filters.control("demo", "me.sh", "one", "join")).toThrow(/Invalid endpoint/);
    expect(() => filters.control("demo", "mesh", "o*", "join")).toThrow(/Invalid target/);
    expect(() => filters.control("demo", "mesh", "one", "jo>")).toThrow(/Invalid command/);
    expect(filters.seat("demo", alice)).toBe("cotal.demo.seat.local.alice.*.*");
    expect(filters.seatsOf("demo", "cotal_run")).toBe("cotal.demo.seat.cotal_run.*.*.*");
    expect(filters.kind("demo", "inst")).toBe("cotal.demo.inst.>");
    expect(() => filters.anycast("demo", "r.x")).toThrow(/Invalid role/);
  });
});

describe("principals", () => {
  it("ids and dashed forms", () => {
    expect(principalId(principal("acme", "bob"))).toBe("acme.bob");
    expect(principalDashed(principal("acme", "bob"))).toBe("acme-bob");
  });
  it("parse a bare name as local, an id as itself, and refuse anything else", () => {
    expect(parsePrincipal("bob")).toEqual({ owner: "local", actor: "bob" });
    expect(parsePrincipal("acme.bob")).toEqual({ owner: "acme", actor: "bob" });
    expect(() => parsePrincipal("a.b.c")).toThrow(InvalidTokenError);
    expect(() => parsePrincipal("a.b.c")).toThrow(/Invalid principal "a.b.c".*<owner>.<actor> with each part of letters, digits and '_'/);
    expect(() => parsePrincipal("ac-me.bob")).toThrow(/Invalid owner "ac-me"/);
    expect(() => parsePrincipal("acme.b-ob")).toThrow(/Invalid actor name "b-ob"/);
  });
  it("refuse what is not a string at all", () => {
    expect(() => assertToken("name", "role", 42 as unknown as string)).toThrow(/Invalid role "42"/);
    expect(() => assertChannel(undefined as unknown as string)).toThrow(/Invalid channel "undefined"/);
  });
});

describe("durable names", () => {
  it("a channel membership: the dashed principal (and uid) and 12 hex of sha256(channel)", () => {
    const digest = createHash("sha256").update("team.backend").digest("hex").slice(0, 12);
    expect(durables.channel(alice, "team.backend")).toBe(`ch_local-alice-${digest}`);
    expect(durables.channel(alice, "team.backend", uid)).toBe(`ch_local-alice-${uid}-${digest}`);
    expect(() => durables.channel(alice, "team.backend", "NOT-A-UID")).toThrow(/Invalid lifecycle uid/);
    expect(() => durables.anycast("a.b")).toThrow(/Invalid role "a.b"/);
  });
});

describe("messages on the wire", () => {
  const base = { id: "m1", ts: 1_767_225_600_000, space: "demo", from: { id: "local.alice", name: "alice" }, channel: "g" };
  /** A message whose encoding is exactly `bytes` long. */
  function ofSize(bytes: number): CotalMessage {
    const empty = encodeMessage(CotalMessage.parse({ ...base, parts: [{ kind: "text", text: "" }] })).byteLength;
    return CotalMessage.parse({ ...base, parts: [{ kind: "text", text: "x".repeat(bytes - empty) }] });
  }

  it("exactly 256 KiB encodes and decodes; one byte more is refused both ways", () => {
    const max = ofSize(LIMITS.maxMessageBytes);
    const bytes = encodeMessage(max);
    expect(bytes.byteLength).toBe(LIMITS.maxMessageBytes);
    expect(decodeMessage(bytes)).toEqual(max);
    const over = ofSize(LIMITS.maxMessageBytes + 1);
    expect(() => encodeMessage(over)).toThrow(PayloadTooLargeError);
    const raw = new TextEncoder().encode(JSON.stringify(over));
    expect(raw.byteLength).toBe(LIMITS.maxMessageBytes + 1);
    const err = (() => {
      try {
        decodeMessage(raw);
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(PayloadTooLargeError);
    expect(err).toMatchObject({ code: "payload-too-large", size: LIMITS.maxMessageBytes + 1, limit: LIMITS.maxMessageBytes });
  });

  it("an invalid message is refused before encoding, naming the field", () => {
    expect(() => encodeMessage({ ...base, id: "has space", parts: [{ kind: "text", text: "x" }] } as CotalMessage)).toThrow(ValidationError);
    expect(() => encodeMessage({ ...base, id: "has space", parts: [{ kind: "text", text: "x" }] } as CotalMessage)).toThrow(
      /Invalid message: id: id must not contain whitespace\./,
    );
  });

  it("JSON that is not JSON is a validation error that keeps its cause", () => {
    try {
      decodeMessage(new TextEncoder().encode("{nope"));
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(ValidationError);
      expect(e).toMatchObject({ code: "invalid-input", what: "message", issues: ["payload is not valid JSON"] });
      expect((e as Error).cause).toBeInstanceOf(SyntaxError);
    }
  });

  it("issues are described with their path, or alone at the top", () => {
    const r = CotalMessage.safeParse({ ...base, parts: [] });
    expect(describeIssues(r.error!)).toEqual([expect.stringMatching(/^parts: /)]);
    const top = CotalMessage.safeParse({ ...base, to: "local.bob", parts: [{ kind: "text", text: "x" }] });
    expect(describeIssues(top.error!)).toEqual(["exactly one of channel, to or toService must be set"]);
  });

  it("messageText joins the text parts only", () => {
    expect(
      messageText({
        parts: [
          { kind: "text", text: "a" },
          { kind: "data", data: { text: "not me" } },
          { kind: "text", text: "b" },
        ],
      }),
    ).toBe("a\nb");
    expect(messageText({ parts: [{ kind: "data", data: 1 }] })).toBe("");
  });
});

describe("errors", () => {
  it("a CotalError carries code, remedy (appended to the message) and cause", () => {
    const cause = new Error("root");
    const e = new CotalError("some-code", "It broke.", { remedy: "Fix it.", cause });
    expect(e).toMatchObject({ code: "some-code", remedy: "Fix it.", message: "It broke. Fix it.", name: "CotalError" });
    expect(e.cause).toBe(cause);
    expect(new CotalError("c", "Plain.")).toMatchObject({ message: "Plain.", remedy: undefined });
  });
  it("InvalidTokenError names the token, the alphabet and the remedy", () => {
    const e = new InvalidTokenError("role", "a.b", "letters");
    expect(e).toMatchObject({ code: "invalid-token", name: "InvalidTokenError", what: "role", token: "a.b", alphabet: "letters" });
    expect(e.message).toBe('Invalid role "a.b": it must be non-empty and use only letters. Choose a role made of letters; names are refused, never rewritten.');
  });
  it("ValidationError lists the issues; PayloadTooLargeError names size and limit", () => {
    expect(new ValidationError("args", ["a: bad", "b: worse"]).message).toBe("Invalid args: a: bad; b: worse.");
    expect(new ValidationError("args", ["x"]).code).toBe("invalid-input");
    const p = new PayloadTooLargeError(10, 5);
    expect(p.message).toMatch(/^Message is 10 bytes, over the limit of 5 bytes\. Send less text/);
  });
});

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

// The presence record and its beat: defaults a reader may rely on, every bound that keeps a record
// within the bucket's 16 KiB (each named when broken), and the beat's subjects.
import { describe, expect, it } from "vitest";
import {
  AgentCard,
  beatFilter,
  beatSubject,
  BUCKET_VALUE_BYTES,
  Condition,
  InvalidTokenError,
  Presence,
  PRESENCE_FIELD_BOUNDS as B,
  PresenceBeat,
  RESERVED_META_KEYS,
} from "../../schemas/index.js";

const card = { id: "local.bob", name: "bob", kind: "agent" } as const;
const record = { card, status: "idle", ts: 1_000 } as const;
const messageOf = (r: { success: boolean; error?: { issues: { message: string }[] } }) => r.error?.issues[0]?.message;

describe("AgentCard", () => {
  it("defaults no tags and no meta; the reserved meta keys are the ones every writer uses", () => {
    expect(AgentCard.parse(card)).toEqual({ ...card, tags: [], meta: {} });
    expect(RESERVED_META_KEYS).toEqual(["connector", "model", "provider", "host", "cwd", "repo", "branch", "sessionId"]);
  });

  it("meta holds at most its bound of entries, keys of at most their bound of characters, and says so", () => {
    const full = Object.fromEntries(Array.from({ length: B.metaEntries }, (_, i) => [`k${i}`, "v"]));
    expect(AgentCard.safeParse({ ...card, meta: full }).success).toBe(true);
    const over = AgentCard.safeParse({ ...card, meta: { ...full, one_more: "v" } });
    expect(messageOf(over)).toBe(`meta holds at most ${B.metaEntries} entries`);
    expect(AgentCard.safeParse({ ...card, meta: { ["k".repeat(B.metaKeyLength)]: "v" } }).success).toBe(true);
    expect(AgentCard.safeParse({ ...card, meta: { ["k".repeat(B.metaKeyLength + 1)]: "v" } }).success).toBe(false);
    expect(AgentCard.safeParse({ ...card, meta: { "": "v" } }).success).toBe(false);
  });

  it("refuses a kind it does not know, an id that is not a principal, and a runtime that is not a token", () => {
    expect(AgentCard.safeParse({ ...card, kind: "robot" }).success).toBe(false);
    expect(AgentCard.safeParse({ ...card, id: "bob" }).success).toBe(false);
    expect(AgentCard.safeParse({ ...card, runtime: "claude code" }).success).toBe(false);
    expect(AgentCard.safeParse({ ...card, runtime: "claude" }).success).toBe(true);
  });
});

describe("Presence", () => {
  it("defaults attention open, no channel modes and no channels", () => {
    expect(Presence.parse(record)).toEqual({ ...record, card: { ...card, tags: [], meta: {} }, attention: "open", channelModes: {}, channels: [] });
  });

  it("a channel's mode on the wire is quiet or muted only (normal is its absence)", () => {
    expect(Presence.safeParse({ ...record, channelModes: { general: "quiet", ops: "muted" } }).success).toBe(true);
    expect(Presence.safeParse({ ...record, channelModes: { general: "normal" } }).success).toBe(false);
  });

  it("at most its bound of channels, in the list and in the modes, each bound named", () => {
    const names = Array.from({ length: B.channels + 1 }, (_, i) => `c${i}`);
    expect(Presence.safeParse({ ...record, channels: names.slice(0, B.channels) }).success).toBe(true);
    expect(Presence.safeParse({ ...record, channels: names }).success).toBe(false);
    const modes = Object.fromEntries(names.map((n) => [n, "quiet"]));
    expect(messageOf(Presence.safeParse({ ...record, channelModes: modes }))).toBe(`channelModes holds at most ${B.channels} channels`);
  });

  it("environment is free-form JSON of at most its bound of bytes, counted in UTF-8", () => {
    const fits = "x".repeat(B.environmentBytes - 2); // the quotes make up the rest
    expect(Presence.safeParse({ ...record, environment: fits }).success).toBe(true);
    expect(messageOf(Presence.safeParse({ ...record, environment: fits + "x" }))).toBe(`environment is at most ${B.environmentBytes} bytes of JSON`);
    // é is two bytes in UTF-8: half as many characters fill the same bytes.
    expect(Presence.safeParse({ ...record, environment: "é".repeat(B.environmentBytes / 2) }).success).toBe(false);
  });

  it("the whole record fits the bucket's value bound, and says so when it does not", () => {
    const big = {
      ...record,
      card: { ...card, description: "d".repeat(1000), meta: Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`k${i}`, "v".repeat(1000)])) },
    };
    const r = Presence.safeParse(big);
    expect(r.success).toBe(false);
    expect(messageOf(r)).toBe(`a presence record is at most ${BUCKET_VALUE_BYTES.presence} bytes of JSON`);
  });

  it("unread is a whole number of messages, never negative", () => {
    expect(Presence.safeParse({ ...record, unread: 0 }).success).toBe(true);
    expect(Presence.safeParse({ ...record, unread: -1 }).success).toBe(false);
    expect(Presence.safeParse({ ...record, unread: 1.5 }).success).toBe(false);
  });
});

describe("Condition", () => {
  it("a known code with bounded words", () => {
    expect(Condition.safeParse({ code: "approval", source: "hook:PermissionRequest", message: "Bash" }).success).toBe(true);
    expect(Condition.safeParse({ code: "sleepy" }).success).toBe(false);
    expect(Condition.safeParse({ code: "failed", message: "m".repeat(1001) }).success).toBe(false);
    expect(Condition.safeParse({ code: "failed", source: "s".repeat(201) }).success).toBe(false);
  });
});

describe("beats", () => {
  it("a beat carries the record as last written", () => {
    expect(PresenceBeat.safeParse({ ts: 2_000, presence: record }).success).toBe(true);
    expect(PresenceBeat.safeParse({ ts: 2_000 }).success).toBe(false);
  });

  it("are on cotal.<space>.beat.<owner>.<actor>, a name that would escape the subject refused", () => {
    expect(beatSubject("team", { owner: "local", actor: "bob" })).toBe("cotal.team.beat.local.bob");
    expect(beatFilter("team")).toBe("cotal.team.beat.*.*");
    expect(() => beatSubject("team", { owner: "local", actor: "b.ob" })).toThrow(InvalidTokenError);
    expect(() => beatSubject("team", { owner: "lo*", actor: "bob" })).toThrow(InvalidTokenError);
    expect(() => beatFilter("te>am")).toThrow(InvalidTokenError);
  });
});

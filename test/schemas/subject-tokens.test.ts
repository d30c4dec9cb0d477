// Every slot of every subject kind is checked, and the 64-character token limit holds
// everywhere a token is read or built: a subject that would name a wrong principal is dropped,
// never half-accepted (mutation testing once found survivors in schemas/).
import { describe, expect, it } from "vitest";
import {
  anycastSubject,
  assertChannel,
  assertToken,
  ChannelName,
  chatSubject,
  controlSubject,
  dmSubject,
  durables,
  InvalidTokenError,
  isToken,
  localPrincipal,
  MAX_TOKEN_LENGTH,
  parsePrincipal,
  parseSubject,
  principal,
  PrincipalId,
  PrincipalToken,
  RoleName,
  SpaceName,
  seatSubject,
} from "../../schemas/index.js";

const alice = localPrincipal("alice");
const t64 = "a".repeat(64);
const t65 = "a".repeat(65);

describe("parseSubject refuses a bad principal token in every slot of every kind", () => {
  // Each token below is a valid token of some other alphabet or none: '-' is a name character
  // but not a principal one, '*' and '>' are wildcards, 65 characters is over the limit.
  const badPrincipalTokens = ["lo-cal", "*", ">", t65];
  const slots: Array<[string, (bad: string) => string, RegExp]> = [
    ["the DM recipient's owner", (b) => `cotal.demo.inst.${b}.bob.local.alice`, /owner/],
    ["the DM recipient's actor", (b) => `cotal.demo.inst.local.${b}.local.alice`, /actor/],
    ["the DM sender's owner", (b) => `cotal.demo.inst.local.bob.${b}.alice`, /owner/],
    ["the DM sender's actor", (b) => `cotal.demo.inst.local.bob.local.${b}`, /actor/],
    ["the anycast sender's owner", (b) => `cotal.demo.svc.reviewer.${b}.alice`, /owner/],
    ["the anycast sender's actor", (b) => `cotal.demo.svc.reviewer.local.${b}`, /actor/],
    ["the control caller's owner", (b) => `cotal.demo.ep.mesh.one.join.${b}.alice`, /owner/],
    ["the control caller's actor", (b) => `cotal.demo.ep.mesh.one.join.local.${b}`, /actor/],
    ["the seat's owner", (b) => `cotal.demo.seat.${b}.alice.local.m1`, /owner/],
    ["the seat's actor", (b) => `cotal.demo.seat.local.${b}.local.m1`, /actor/],
    ["the seat-log writer's owner", (b) => `cotal.demo.seat.local.alice.${b}.m1`, /owner/],
    ["the seat-log writer's actor", (b) => `cotal.demo.seat.local.alice.local.${b}`, /actor/],
    ["the chat sender's owner", (b) => `cotal.demo.chat.${b}.alice.general`, /owner/],
    ["the chat sender's actor", (b) => `cotal.demo.chat.local.${b}.general`, /actor/],
  ];
  for (const [slot, subject, names] of slots) {
    it.each(badPrincipalTokens)(`${slot}: %j is dropped as an invalid token`, (bad) => {
      const r = parseSubject(subject(bad));
      expect(r).toMatchObject({ kind: "rejected", reason: "invalid-token" });
      expect(r.kind === "rejected" && r.detail).toMatch(names);
      expect(r.kind === "rejected" && r.detail).toContain(JSON.stringify(subject(bad)));
    });
  }

  it.each([
    ["an anycast role", "cotal.demo.svc.rev*.local.alice", /role "rev\*"/],
    ["an anycast role over 64 characters", `cotal.demo.svc.${t65}.local.alice`, /role/],
    ["a control endpoint", "cotal.demo.ep.me*sh.one.join.local.alice", /endpoint "me\*sh"/],
    ["a control target", "cotal.demo.ep.mesh.o>ne.join.local.alice", /target "o>ne"/],
    ["a control command", "cotal.demo.ep.mesh.one.jo*in.local.alice", /command "jo\*in"/],
    ["a channel segment", "cotal.demo.chat.local.alice.team.ba*ck", /channel "team.ba\*ck"/],
    ["a channel segment over 64 characters", `cotal.demo.chat.local.alice.team.${t65}`, /channel/],
    ["a space over 64 characters", `cotal.${t65}.chat.local.alice.general`, /space/],
  ])("%s that is not a valid name is dropped", (_what, subject, detail) => {
    const r = parseSubject(subject);
    expect(r).toMatchObject({ kind: "rejected", reason: "invalid-token" });
    expect(r.kind === "rejected" && r.detail).toMatch(detail);
  });

  it.each([
    ["two tokens", "cotal.demo"],
    ["one token", "cotal"],
    ["an empty subject", ""],
    ["a DM with 6 tokens", "cotal.demo.inst.local.bob.local"],
    ["an anycast with 7 tokens", "cotal.demo.svc.reviewer.local.alice.x"],
    ["a control call with 7 tokens", "cotal.demo.ep.mesh.one.join.local"],
    ["a control call with 9 tokens", "cotal.demo.ep.mesh.one.join.local.alice.x"],
    ["a seat subject with 4 tokens", "cotal.demo.seat.local"],
    ["a seat subject with 5 tokens (no writer)", "cotal.demo.seat.local.alice"],
    ["a seat subject with 6 tokens", "cotal.demo.seat.local.alice.x"],
    ["a seat subject with 8 tokens", "cotal.demo.seat.local.alice.local.m1.x"],
  ])("%s is malformed", (_what, subject) => {
    expect(parseSubject(subject)).toMatchObject({ kind: "rejected", reason: "malformed" });
  });

  it("says how many tokens a wrong-length subject has", () => {
    expect(parseSubject("cotal.demo.inst.local.bob.local")).toMatchObject({ detail: expect.stringContaining("must have 7 tokens, has 6") });
    expect(parseSubject("cotal.demo.svc.reviewer.local")).toMatchObject({ detail: expect.stringContaining("must have 6 tokens, has 5") });
    expect(parseSubject("cotal.demo.ep.mesh.one.join.local")).toMatchObject({ detail: expect.stringContaining("must have 8 tokens, has 7") });
    expect(parseSubject("cotal.demo.seat.local")).toMatchObject({ detail: expect.stringContaining("must have 7 tokens, has 4") });
  });

  it("names the retired kind it dropped", () => {
    expect(parseSubject("cotal.demo.task.local.alice")).toMatchObject({ detail: expect.stringContaining('kind "task"') });
  });
});

describe("the 64-character token limit", () => {
  it("is 64", () => {
    expect(MAX_TOKEN_LENGTH).toBe(64);
  });

  it("accepts a 64-character token of every alphabet and refuses 65", () => {
    for (const alphabet of ["space", "principal", "name"] as const) {
      expect(isToken(alphabet, t64)).toBe(true);
      expect(isToken(alphabet, t65)).toBe(false);
      expect(assertToken(alphabet, "thing", t64)).toBe(t64);
      expect(() => assertToken(alphabet, "thing", t65)).toThrow(InvalidTokenError);
    }
    expect(() => assertToken("name", "role", t65)).toThrow(/Invalid role "a{65}".*\(at most 64\)/);
  });

  it("the zod schemas agree with assertToken at the limit", () => {
    for (const schema of [SpaceName, PrincipalToken, RoleName]) {
      expect(schema.safeParse(t64).success).toBe(true);
      expect(schema.safeParse(t65).success).toBe(false);
    }
    expect(SpaceName.safeParse(t65).error?.issues[0]?.message).toBe("space must be at most 64 characters");
    expect(RoleName.safeParse("a.b").error?.issues[0]?.message).toBe("role must use only letters, digits, '_' and '-'");
    expect(PrincipalToken.safeParse("lo-cal").success).toBe(false);
    expect(PrincipalId.safeParse(`local.${t64}`).success).toBe(true);
    expect(PrincipalId.safeParse(`local.${t65}`).success).toBe(false);
  });

  it("a parsed subject carries 64-character tokens whole", () => {
    const p = principal(t64, t64);
    expect(parseSubject(dmSubject(t64, p, p))).toEqual({ kind: "inst", space: t64, to: p, from: p });
    expect(parseSubject(anycastSubject("demo", t64, p))).toEqual({ kind: "svc", space: "demo", role: t64, from: p });
    expect(parseSubject(controlSubject("demo", t64, t64, t64, p))).toEqual({
      kind: "ep",
      space: "demo",
      endpoint: t64,
      target: t64,
      command: t64,
      from: p,
    });
    expect(parseSubject(seatSubject("demo", p, p))).toEqual({ kind: "seat", space: "demo", seat: p, from: p });
  });

  it("builders refuse a 65-character token in every slot", () => {
    const long = { owner: "local", actor: t65 };
    expect(() => chatSubject(t65, alice, "general")).toThrow(/Invalid space/);
    expect(() => chatSubject("demo", long, "general")).toThrow(/Invalid actor name/);
    expect(() => chatSubject("demo", { owner: t65, actor: "alice" }, "general")).toThrow(/Invalid owner/);
    expect(() => dmSubject("demo", long, alice)).toThrow(InvalidTokenError);
    expect(() => anycastSubject("demo", t65, alice)).toThrow(/Invalid role/);
    expect(() => controlSubject("demo", t65, "one", "join", alice)).toThrow(/Invalid endpoint/);
    expect(() => controlSubject("demo", "mesh", t65, "join", alice)).toThrow(/Invalid target/);
    expect(() => controlSubject("demo", "mesh", "one", t65, alice)).toThrow(/Invalid command/);
    expect(() => seatSubject("demo", long, alice)).toThrow(InvalidTokenError);
    expect(() => seatSubject("demo", alice, long)).toThrow(InvalidTokenError);
    expect(() => parsePrincipal(t65)).toThrow(InvalidTokenError);
    expect(() => durables.anycast(t65)).toThrow(InvalidTokenError);
  });

  it("a channel: 64-character segments, at most 255 characters in all", () => {
    const seg = (c: string) => c.repeat(63);
    const exactly255 = [seg("a"), seg("b"), seg("c"), seg("d")].join("."); // 4 × 63 + 3 dots
    expect(exactly255).toHaveLength(255);
    expect(assertChannel(exactly255)).toBe(exactly255);
    expect(() => assertChannel(exactly255 + "z")).toThrow(InvalidTokenError); // every segment still valid: only the length is over
    expect(assertChannel(`team.${t64}`)).toBe(`team.${t64}`);
    expect(() => assertChannel(`team.${t65}`)).toThrow(/segment "a{65}" is not/);
    expect(() => assertChannel("")).toThrow(InvalidTokenError);
    expect(ChannelName.safeParse(`team.${t64}`).success).toBe(true);
    expect(ChannelName.safeParse(`team.${t65}`).success).toBe(false);
    expect(ChannelName.safeParse(exactly255).success).toBe(true);
    expect(ChannelName.safeParse(exactly255 + "z").success).toBe(false);
  });
});

// The spawn right's wire pieces: its limits, the persona digests a grant pins, the grant as a
// manager reads it, and the operator's exact channel rights.
import { describe, expect, it } from "vitest";
import { AllowSpawn, ChannelRights, MAX_SPAWN_LIMIT, MAX_SPAWN_PERSONAS, OpeningPrompt, PersonaDigests, SpawnGrant, SpawnLimit } from "../../schemas/index.js";

describe("spawn right", () => {
  it("a limit of 1 to MAX_SPAWN_LIMIT whole helpers", () => {
    expect(SpawnLimit.safeParse(1).success).toBe(true);
    expect(SpawnLimit.safeParse(MAX_SPAWN_LIMIT).success).toBe(true);
    expect(SpawnLimit.safeParse(0).success).toBe(false);
    expect(SpawnLimit.safeParse(MAX_SPAWN_LIMIT + 1).success).toBe(false);
    expect(SpawnLimit.safeParse(1.5).success).toBe(false);
  });

  it("at most MAX_SPAWN_PERSONAS personas, each a valid name", () => {
    const names = Array.from({ length: MAX_SPAWN_PERSONAS }, (_, i) => `p${i}`);
    expect(AllowSpawn.safeParse(names).success).toBe(true);
    expect(AllowSpawn.safeParse([...names, "one_more"]).success).toBe(false);
    expect(AllowSpawn.safeParse(["a.b"]).success).toBe(false);
  });

  it("a persona digest is sha256: and 64 lowercase hex, and says so when it is not", () => {
    const hex = "0123456789abcdef".repeat(4);
    expect(PersonaDigests.safeParse({ coder: `sha256:${hex}` }).success).toBe(true);
    const upper = PersonaDigests.safeParse({ coder: `sha256:${hex.toUpperCase()}` });
    expect(upper.success).toBe(false);
    expect(upper.error?.issues[0]?.message).toBe('a persona digest is "sha256:" and 64 lowercase hex characters');
    expect(PersonaDigests.safeParse({ coder: hex }).success).toBe(false);
    expect(PersonaDigests.safeParse({ "a*": `sha256:${hex}` }).success).toBe(false);
  });

  it("a grant read for a name never minted is empty, not missing", () => {
    expect(SpawnGrant.parse({ principal: "local.bob", minted: false })).toEqual({
      principal: "local.bob",
      minted: false,
      allowSubscribe: [],
      allowPublish: [],
      allowSpawn: [],
      personaDigests: {},
    });
  });

  it("an opening prompt is 1 to 100,000 characters", () => {
    expect(OpeningPrompt.safeParse("").success).toBe(false);
    expect(OpeningPrompt.safeParse("x".repeat(100_000)).success).toBe(true);
    expect(OpeningPrompt.safeParse("x".repeat(100_001)).success).toBe(false);
  });
});

describe("ChannelRights", () => {
  it("read and write name only channels in over, each outsider named", () => {
    expect(ChannelRights.safeParse({ over: ["general", "ops"], read: ["general"], write: [] }).success).toBe(true);
    const r = ChannelRights.safeParse({ over: ["general"], read: ["ops", "dev"], write: ["x"] });
    expect(r.success).toBe(false);
    expect(r.error?.issues.map((i) => [i.path.join("."), i.message])).toEqual([
      ["read", "names ops, dev, which over does not"],
      ["write", "names x, which over does not"],
    ]);
  });

  it("refuses keys it does not know", () => {
    expect(ChannelRights.safeParse({ over: [], read: [], write: [], admin: true }).success).toBe(false);
  });
});

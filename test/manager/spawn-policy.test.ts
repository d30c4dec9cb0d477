// The helper policy (manager/helpers.ts; docs/manager.md, Helpers) as pure functions: which spawn
// arguments are the operator's, which personas a grant allows, the limit, the runtime a helper may
// run, and every way a helper can be wider than its spawner. The manager's use of it on a real mesh
// is test/manager/helpers.test.ts.
import { describe, expect, test } from "vitest";
import {
  helperAgent,
  refuseOperatorOnly,
  refuseOverLimit,
  refuseUngranted,
  refuseWider,
  refuseWithoutRight,
  seatScope,
  spawnLimitOf,
  widerThan,
} from "../../manager/internal.js";
import { AgentFrontmatter, DEFAULT_SPAWN_LIMIT, SpawnGrant } from "../../schemas/index.js";

const fm = (over: Record<string, unknown> = {}) => AgentFrontmatter.parse({ name: "helper", ...over });
const grant = (over: Record<string, unknown> = {}) =>
  SpawnGrant.parse({
    principal: "local.sam",
    minted: true,
    profile: "agent",
    allowSubscribe: ["general", "ops"],
    allowPublish: ["general"],
    role: "dev",
    allowSpawn: ["helper"],
    ...over,
  });
const codeOf = (f: () => unknown): string | undefined => {
  try {
    f();
    return undefined;
  } catch (err) {
    return (err as { code?: string }).code;
  }
};

describe("the helper policy", () => {
  test("a seat's scope: the spawn's channels else the file's subscribe, plus the file's allow-lists; the spawn's role else the file's", () => {
    const file = fm({ subscribe: ["general"], allowSubscribe: ["ops"], allowPublish: ["general"], role: "dev" });
    expect(seatScope({ channels: [] }, file)).toEqual({ role: "dev", channels: ["general"], allowSubscribe: ["general", "ops"], allowPublish: ["general"] });
    expect(seatScope({ channels: ["ops"], role: "qa" }, file)).toEqual({
      role: "qa",
      channels: ["ops"],
      allowSubscribe: ["ops"],
      allowPublish: ["ops", "general"],
    });
    expect(seatScope({ channels: [] }, undefined)).toEqual({ role: undefined, channels: [], allowSubscribe: [], allowPublish: [] });
  });

  test("the operator's channel rights decide the channels they are over, whatever the spawn and the file give; joining one it may not read is refused", () => {
    const file = fm({ allowSubscribe: ["audit"], allowPublish: ["ops", "audit"] });
    const channelRights = { over: ["ops", "audit"], read: ["ops"], write: [] };
    // ops: joined and readable, but not writable (even though the file allows posting there); audit: neither.
    expect(seatScope({ channels: ["general", "ops"], channelRights }, file)).toEqual({
      role: undefined,
      channels: ["general", "ops"],
      allowSubscribe: ["general", "ops"],
      allowPublish: ["general"],
    });
    // A right on a channel it does not join (post without reading).
    expect(seatScope({ channels: ["general"], channelRights: { over: ["ops"], read: [], write: ["ops"] } }, undefined).allowPublish).toEqual([
      "general",
      "ops",
    ]);
    expect(codeOf(() => seatScope({ channels: ["ops"], channelRights: { over: ["ops"], read: [], write: ["ops"] } }, undefined))).toBe("bad-rights");
  });

  test("operator-only arguments are refused, each by name", () => {
    expect(() => refuseOperatorOnly("local.sam", {})).not.toThrow();
    for (const k of ["cwd", "resume", "claim", "allowSpawn", "spawnLimit", "channelRights"]) {
      expect(() => refuseOperatorOnly("local.sam", { [k]: k === "spawnLimit" ? 2 : "x" })).toThrow(
        `Only the operator passes ${k} to a spawn; local.sam may not.`,
      );
    }
  });

  test("the right and the persona come from the grant", () => {
    expect(codeOf(() => refuseWithoutRight("local.sam", grant()))).toBeUndefined();
    for (const g of [grant({ minted: false }), grant({ profile: "reader" }), grant({ allowSpawn: [] })]) {
      expect(codeOf(() => refuseWithoutRight("local.sam", g))).toBe("spawn-not-allowed");
      expect(codeOf(() => refuseUngranted("local.sam", g, "helper"))).toBe("spawn-not-allowed");
    }
    expect(codeOf(() => refuseUngranted("local.sam", grant(), "helper"))).toBeUndefined();
    expect(() => refuseUngranted("local.sam", grant(), "coder")).toThrow("local.sam may spawn helpers of helper, not coder.");
    expect(() => refuseUngranted("local.sam", grant(), undefined)).toThrow("A helper is spawned by persona; local.sam may spawn helper.");
  });

  test("the limit: the grant's, else the default; refused at it, naming the helpers held", () => {
    expect(spawnLimitOf(grant())).toBe(DEFAULT_SPAWN_LIMIT);
    expect(spawnLimitOf(grant({ spawnLimit: 1 }))).toBe(1);
    expect(() => refuseOverLimit("local.sam", grant({ spawnLimit: 2 }), ["a"])).not.toThrow();
    expect(() => refuseOverLimit("local.sam", grant({ spawnLimit: 2 }), ["a", "b"])).toThrow("local.sam already holds 2 helpers (a, b), its limit of 2");
    expect(() => refuseOverLimit("local.sam", grant({ spawnLimit: 1 }), ["a"])).toThrow("already holds 1 helper (a), its limit of 1");
  });

  test("a helper runs its persona's runtime or echo; claude, the spawn's default, reads as unasked", () => {
    expect(helperAgent("echo", fm({ runtime: "codex" }), "helper")).toBe("echo");
    expect(helperAgent("claude", fm({ runtime: "codex" }), "helper")).toBe("codex");
    expect(helperAgent("codex", fm({ runtime: "codex" }), "helper")).toBe("codex");
    expect(helperAgent("claude", fm(), "helper")).toBe("claude");
    expect(codeOf(() => helperAgent("opencode", fm(), "helper"))).toBe("wider-than-spawner");
  });

  test("wider than its spawner: every way is named; within it, nothing", () => {
    const helper = (scope: Partial<Parameters<typeof widerThan>[0]> = {}) => ({
      ...seatScope({ channels: ["general"] }, fm()),
      agent: "claude" as const,
      fm: fm(),
      ...scope,
    });
    expect(widerThan(helper(), grant())).toEqual([]);
    expect(widerThan(helper({ role: "dev" }), grant())).toEqual([]);
    expect(widerThan(helper({ allowSubscribe: ["general", "secret"] }), grant())).toEqual(["it would read secret, which its spawner may not"]);
    expect(widerThan(helper({ allowPublish: ["ops"] }), grant())).toEqual(["it would post on ops, where its spawner may not"]);
    expect(widerThan(helper({ role: "qa" }), grant())).toEqual(["it would take role qa's anycasts, a role its spawner does not hold (it holds dev)"]);
    expect(widerThan(helper({ role: "qa" }), grant({ role: undefined }))).toEqual(["it would take role qa's anycasts, a role its spawner does not hold"]);
    expect(widerThan(helper({ fm: fm({ allowSpawn: ["helper"] }) }), grant())).toEqual([
      "its agent file lets it spawn helpers (allowSpawn), which a helper may not",
    ]);
    // Tools: only against a spawner's agent file, and never for an echo helper (it runs none).
    const tooled = fm({ allowedTools: ["Read", "Bash(rm:*)"], launchOptions: { "permission-mode": "bypassPermissions" } });
    expect(widerThan(helper({ fm: tooled }), grant())).toEqual([]);
    expect(widerThan(helper({ fm: tooled }), grant(), fm({ allowedTools: ["Read"] }))).toEqual([
      "its agent file allows Bash(rm:*), which its spawner's does not",
      "its agent file sets --permission-mode as its spawner's does not",
    ]);
    expect(
      widerThan(helper({ fm: tooled }), grant(), fm({ allowedTools: ["Read", "Bash(rm:*)"], launchOptions: { "permission-mode": "bypassPermissions" } })),
    ).toEqual([]);
    expect(widerThan(helper({ fm: tooled, agent: "echo" }), grant(), fm())).toEqual([]);
    expect(() => refuseWider("local.sam", "helper", [])).not.toThrow();
    expect(() => refuseWider("local.sam", "helper", ["a", "b"])).toThrow("A helper of helper would be wider than local.sam: a; b. Nothing was started.");
  });
});

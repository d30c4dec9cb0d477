// Pure policies: presence from hooks, wake decisions, launch resolution, the hook registry.
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  HOOKS,
  Inbox,
  LaunchError,
  PRINCIPAL_TOKEN_RE,
  presenceFromHook,
  renderHooksSettings,
  resolveLaunch,
  seatClassifier,
  SPACE_RE,
  stopFailureCondition,
  trimPayload,
  Waker,
  type Wake,
  type WakeView,
} from "../../connector/internal.js";
import { nextPresence, presenceChange, type PresenceState } from "../../broker/internal.js";
import { ALPHABETS, principal, type Attention } from "../../schemas/index.js";
import { fakeMail } from "./helpers.js";

describe("presence from hooks", () => {
  const idle = { turnOpen: false, status: "idle" as const };
  const busy = { turnOpen: true, status: "working" as const };
  const p = (extra: Record<string, unknown> = {}) => ({ hook_event_name: "x", ...extra });

  it("walks idle → working → idle through a turn, activity carrying the tool name only", () => {
    expect(presenceFromHook("SessionStart", p({ source: "startup" }), idle)).toEqual({
      patch: { status: "idle", condition: null, activity: null },
      turnOpen: false,
    });
    expect(presenceFromHook("UserPromptSubmit", p(), idle)).toEqual({
      patch: { status: "working", condition: null, activity: null, active: true },
      turnOpen: true,
    });
    expect(presenceFromHook("PreToolUse", p({ tool_name: "Bash" }), busy)).toEqual({
      patch: { status: "working", condition: null, activity: "Bash", active: true },
      turnOpen: true,
    });
    expect(presenceFromHook("Stop", p(), busy)).toEqual({ patch: { status: "idle", condition: null, activity: null, active: true }, turnOpen: false });
    expect(presenceFromHook("SessionEnd", p({ reason: "other" }), idle)).toEqual({ patch: { status: "offline", activity: null }, turnOpen: false });
  });

  it("a first main-agent tool call starts a turn; a subagent's tool call is progress and nothing else", () => {
    expect(presenceFromHook("PreToolUse", p({ tool_name: "Read" }), idle).patch?.status).toBe("working");
    expect(presenceFromHook("PreToolUse", p({ tool_name: "Read", agent_id: "a1" }), idle)).toEqual({ patch: { active: true }, turnOpen: false });
  });

  it("SessionStart inside an open turn (a compaction) does not claim idle", () => {
    expect(presenceFromHook("SessionStart", p({ source: "compact" }), busy)).toEqual({ turnOpen: true });
  });

  it("maps notifications to waiting with a condition, and ignores informational ones", () => {
    expect(presenceFromHook("Notification", p({ notification_type: "permission_prompt" }), busy).patch).toEqual({
      status: "waiting",
      condition: { code: "approval", source: "hook:Notification", message: "permission_prompt" },
    });
    expect(presenceFromHook("Notification", p({ notification_type: "elicitation_dialog" }), busy).patch).toEqual({
      status: "waiting",
      condition: { code: "input", source: "hook:Notification", message: "elicitation_dialog" },
    });
    expect(presenceFromHook("Notification", p({ notification_type: "idle_prompt" }), idle).patch).toBeUndefined();
  });

  it("idle_prompt (idle at the input, no dialog) clears a stale waiting or working, and leaves an idle seat's condition alone", () => {
    const waiting = { turnOpen: true, status: "waiting" as const };
    expect(presenceFromHook("Notification", p({ notification_type: "idle_prompt" }), waiting)).toEqual({
      patch: { status: "idle", condition: null, activity: null },
      turnOpen: false,
    });
    expect(presenceFromHook("Notification", p({ notification_type: "idle_prompt" }), busy).patch).toEqual({ status: "idle", condition: null, activity: null });
    expect(presenceFromHook("Notification", p({ notification_type: "idle_prompt" }), idle)).toEqual({ turnOpen: false });
  });

  it("a permission dialog reads waiting (approval) the moment it opens (PermissionRequest), turn kept open", () => {
    expect(presenceFromHook("PermissionRequest", p({ tool_name: "Bash" }), busy)).toEqual({
      patch: { status: "waiting", condition: { code: "approval", source: "hook:PermissionRequest", message: "Bash" } },
      turnOpen: true,
    });
  });

  it("maps every StopFailure error to a condition (unknown ones to failed)", () => {
    const cases: Record<string, string> = {
      rate_limit: "rate_limit",
      overloaded: "overloaded",
      authentication_failed: "auth",
      oauth_org_not_allowed: "auth",
      billing_error: "billing",
      account_on_hold: "billing",
      invalid_request: "request",
      model_not_found: "model",
      server_error: "server",
      max_output_tokens: "context",
      unknown: "failed",
      something_new: "failed",
    };
    for (const [error, condition] of Object.entries(cases)) expect(stopFailureCondition(error), error).toBe(condition);
    expect(presenceFromHook("StopFailure", p({ error: "rate_limit" }), busy)).toEqual({
      patch: { status: "idle", condition: { code: "rate_limit", source: "hook:StopFailure", message: "rate_limit" }, activity: null },
      turnOpen: false,
    });
  });

  it("relays only the fields the connector needs, never tool arguments or prompts", () => {
    const raw = { session_id: "s", hook_event_name: "PreToolUse", tool_name: "Bash", tool_input: { command: "rm -rf /" }, prompt: "secret", tool_use_id: "t" };
    expect(trimPayload(raw)).toEqual({ session_id: "s", hook_event_name: "PreToolUse", tool_name: "Bash" });
  });
});

describe("presence times (nextPresence)", () => {
  const start: PresenceState = {
    status: "working",
    statusSince: 100,
    activity: "Bash",
    activitySince: 100,
    attention: "open",
    channelModes: { general: "quiet" },
  };

  it("a heartbeat-like patch (same status, same activity) moves neither statusSince nor activitySince", () => {
    expect(nextPresence(start, { status: "working", activity: "Bash", unread: 2 }, 500)).toEqual({ ...start, unread: 2 });
  });

  it("a new activity moves statusSince and activitySince; clearing it removes activitySince", () => {
    expect(nextPresence(start, { activity: "Edit" }, 500)).toMatchObject({ activity: "Edit", activitySince: 500, statusSince: 500 });
    const cleared = nextPresence(start, { activity: null }, 600);
    expect(cleared).not.toHaveProperty("activity");
    expect(cleared).not.toHaveProperty("activitySince");
    expect(cleared.statusSince).toBe(600);
  });

  it("a new status moves statusSince; progress moves activeAt only", () => {
    expect(nextPresence(start, { status: "idle" }, 700).statusSince).toBe(700);
    expect(nextPresence(start, { active: true }, 800)).toEqual({ ...start, activeAt: 800 });
  });

  it("a condition keeps its since while the code stays, and gets a new one when the code changes", () => {
    const a = nextPresence(start, { condition: { code: "rate_limit", source: "hook:StopFailure" } }, 1_000);
    expect(a.condition).toEqual({ code: "rate_limit", source: "hook:StopFailure", since: 1_000 });
    expect(nextPresence(a, { condition: { code: "rate_limit", source: "hook:StopFailure" } }, 2_000).condition?.since).toBe(1_000);
    expect(nextPresence(a, { condition: { code: "overloaded" } }, 3_000).condition).toEqual({ code: "overloaded", since: 3_000 });
    expect(nextPresence(a, { condition: null }, 4_000)).not.toHaveProperty("condition");
  });

  it("channel mode normal leaves the record: the wire carries quiet and muted only", () => {
    expect(nextPresence(start, { channelModes: { general: "normal", ops: "muted" } }, 1).channelModes).toEqual({ ops: "muted" });
  });
});

describe("what a presence change costs (presenceChange)", () => {
  const working: PresenceState = {
    status: "working",
    statusSince: 100,
    activity: "Bash",
    activitySince: 100,
    activeAt: 100,
    attention: "open",
    channelModes: {},
  };
  const toolCall = { status: "working", condition: null, activity: "Bash", active: true } as const;

  it("the same tool called again changes only activeAt: progress, carried by the next beat", () => {
    expect(presenceChange(working, nextPresence(working, toolCall, 500))).toBe("progress");
  });

  it("a patch that changes nothing (the same ms, or no progress) is no write at all", () => {
    expect(presenceChange(working, nextPresence(working, toolCall, 100))).toBe("none");
    expect(
      presenceChange(working, nextPresence(working, { status: "working", activity: "Bash", attention: "open", channelModes: { general: "normal" } }, 500)),
    ).toBe("none");
  });

  it("a new tool, status, condition, attention, mode or unread count is a write", () => {
    for (const patch of [
      { ...toolCall, activity: "Read" },
      { status: "waiting" as const },
      { condition: { code: "approval" as const, source: "hook:PermissionRequest" } },
      { attention: "dnd" as const },
      { channelModes: { general: "quiet" as const } },
      { unread: 1 },
    ])
      expect(presenceChange(working, nextPresence(working, patch, 500)), JSON.stringify(patch)).toBe("record");
  });

  it("the first progress is a write: readers learn the seat ever moved at once", () => {
    const { activeAt: _, ...fresh } = working;
    expect(presenceChange(fresh, nextPresence(fresh, toolCall, 500))).toBe("record");
  });
});

describe("wake policy", () => {
  function setup(attention: Attention = "open", modes: Record<string, "normal" | "quiet" | "muted"> = {}) {
    const rings: Wake[] = [];
    const waker = new Waker((w) => rings.push(w));
    const inbox = new Inbox(seatClassifier(principal("local", "bob"), (ch) => modes[ch] ?? "normal"));
    const state = { attention, turnOpen: false };
    const view = (): WakeView => ({
      attention: state.attention,
      turnOpen: state.turnOpen,
      modeOf: (ch) => modes[ch] ?? "normal",
      directedWaiting: () => inbox.entries().filter((e) => e.cls === "directed" && !e.handover),
      channelWaiting: () => inbox.entries().filter((e) => e.cls === "channel" && !e.handover),
      me: "local.bob",
    });
    const arrive = (m: ReturnType<typeof fakeMail>) => {
      const { entry } = inbox.add(m);
      if (entry) waker.arrived(entry, view());
    };
    return { rings, waker, inbox, state, view, arrive };
  }

  it("rings once at once for directed mail when idle, and not again until it was read", () => {
    const s = setup();
    s.arrive(fakeMail("dm", "hi", { from: "alice" }));
    s.arrive(fakeMail("anycast", "job", { from: "carol" }));
    expect(s.rings).toHaveLength(1);
    expect(s.rings[0]).toMatchObject({ kind: "directed", meta: { kind: "directed", count: "1" } });
    expect(s.rings[0]!.content).toContain("DM from local.alice");
    s.waker.answered();
    s.arrive(fakeMail("dm", "again"));
    expect(s.rings).toHaveLength(2);
  });

  it("batches ambient chatter into one wake at the next idle transition", () => {
    const s = setup();
    s.state.turnOpen = true;
    for (let i = 0; i < 5; i++) s.arrive(fakeMail("channel", `post ${i}`, { channel: i % 2 ? "ops" : "general" }));
    expect(s.rings).toHaveLength(0);
    s.state.turnOpen = false;
    s.waker.idle(s.view());
    expect(s.rings).toHaveLength(1);
    expect(s.rings[0]).toMatchObject({ kind: "ambient", meta: { count: "5" } });
    expect(s.rings[0]!.content).toContain("#general, #ops");
    s.waker.idle(s.view());
    expect(s.rings).toHaveLength(1);
  });

  it("defers directed wakes while a turn runs, then rings at idle", () => {
    const s = setup();
    s.state.turnOpen = true;
    s.arrive(fakeMail("dm", "hi"));
    expect(s.rings).toHaveLength(0);
    s.state.turnOpen = false;
    s.waker.idle(s.view());
    expect(s.rings.map((r) => r.kind)).toEqual(["directed"]);
  });

  it("focus wakes only for directed mail (mentions included); dnd wakes for nothing", () => {
    const f = setup("focus");
    f.arrive(fakeMail("channel", "chatter"));
    f.waker.idle(f.view());
    expect(f.rings).toHaveLength(0);
    f.arrive(fakeMail("channel", "@bob look", { mentions: ["bob"] }));
    expect(f.rings.map((r) => r.kind)).toEqual(["directed"]);
    const d = setup("dnd");
    d.arrive(fakeMail("dm", "hi"));
    d.arrive(fakeMail("channel", "x"));
    d.waker.idle(d.view());
    expect(d.rings).toHaveLength(0);
  });

  it("quiet channels never wake; muted channels are pull-only and do not wake even when they mention you", () => {
    const s = setup("open", { general: "quiet", noise: "muted" });
    s.arrive(fakeMail("channel", "q", { channel: "general" }));
    s.arrive(fakeMail("channel", "m", { channel: "noise", mentions: ["bob"] }));
    s.waker.idle(s.view());
    expect(s.rings).toHaveLength(0);
    expect(s.inbox.entries().map((e) => e.cls)).toEqual(["channel", "pull"]);
  });
});

describe("launch resolution", () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "cotal-launch-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const token = "t".repeat(40);
  function material(obj: Record<string, unknown>, mode = 0o600): string {
    const f = path.join(dir, `m-${Math.random().toString(36).slice(2)}.json`);
    writeFileSync(f, JSON.stringify(obj));
    chmodSync(f, mode);
    return f;
  }

  it("reads launch material (0600) with its defaults", () => {
    const f = material({
      server: "nats://127.0.0.1:1",
      space: "team",
      name: "alice",
      role: "reviewer",
      channels: ["general"],
      controlToken: token,
      uid: "a".repeat(26),
    });
    expect(resolveLaunch({ COTAL_LAUNCH_MATERIAL: f })).toEqual({
      kind: "launch",
      // The material's folder is the seat's state dir (the event plane's WAL goes under it).
      launch: {
        source: "material",
        server: "nats://127.0.0.1:1",
        space: "team",
        owner: "local",
        name: "alice",
        role: "reviewer",
        channels: ["general"],
        controlToken: token,
        uid: "a".repeat(26),
        stateDir: path.dirname(f),
      },
    });
  });

  it("refuses launch material that others can read", () => {
    const f = material({ server: "x", space: "team", name: "alice", controlToken: token }, 0o644);
    expect(() => resolveLaunch({ COTAL_LAUNCH_MATERIAL: f })).toThrow(/mode 644, not 600.*chmod 600/);
  });

  it("refuses invalid launch material, naming the field", () => {
    const f = material({ server: "x", space: "team", name: "al.ice", controlToken: token, extra: 1 });
    expect(() => resolveLaunch({ COTAL_LAUNCH_MATERIAL: f })).toThrow(/name: .*; .*extra/s);
  });

  it("refuses both launch forms at once", () => {
    const f = material({ server: "x", space: "team", name: "alice", controlToken: token });
    expect(() => resolveLaunch({ COTAL_LAUNCH_MATERIAL: f, COTAL_NAME: "bob" })).toThrow(LaunchError);
    expect(() => resolveLaunch({ COTAL_LAUNCH_MATERIAL: f, COTAL_SERVER: "nats://x" })).toThrow(/Both launch forms/);
  });

  it("joins a hand-started session from the environment", () => {
    expect(
      resolveLaunch({ COTAL_SERVER: "cotal://127.0.0.1:4999/team", COTAL_NAME: "ops.bob", COTAL_CHANNELS: "general, team.backend", COTAL_ROLE: "builder" }),
    ).toEqual({
      kind: "launch",
      launch: {
        source: "env",
        server: "nats://127.0.0.1:4999",
        space: "team",
        owner: "ops",
        name: "bob",
        role: "builder",
        channels: ["general", "team.backend"],
      },
    });
    expect(() => resolveLaunch({ COTAL_NAME: "bob" })).toThrow(/COTAL_SERVER, COTAL_SPACE are not set/);
    expect(() => resolveLaunch({ COTAL_SERVER: "nats://x", COTAL_SPACE: "s", COTAL_NAME: "bad name" })).toThrow(/Invalid hand-started launch/);
  });

  it("names the agent CLI the seat runs: the launch material's runtime wins over COTAL_RUNTIME; a bad name is refused, not cleaned", () => {
    const hand = { COTAL_SERVER: "nats://x", COTAL_SPACE: "s", COTAL_NAME: "bob" };
    const runtimeOf = (env: Record<string, string>) => {
      const r = resolveLaunch(env);
      return r.kind === "launch" ? r.launch.runtime : "not launched";
    };
    expect(runtimeOf(hand)).toBeUndefined();
    expect(runtimeOf({ ...hand, COTAL_RUNTIME: "codex" })).toBe("codex");
    const f = material({ server: "x", space: "team", name: "alice", controlToken: token, runtime: "codex" });
    expect(runtimeOf({ COTAL_LAUNCH_MATERIAL: f, COTAL_RUNTIME: "claude" })).toBe("codex");
    const unsaid = material({ server: "x", space: "team", name: "alice", controlToken: token });
    expect(runtimeOf({ COTAL_LAUNCH_MATERIAL: unsaid, COTAL_RUNTIME: "claude" })).toBe("claude");
    for (const bad of ["Codex", "co dex", "codex.x", "x".repeat(33)])
      expect(() => resolveLaunch({ ...hand, COTAL_RUNTIME: bad }), bad).toThrow(/COTAL_RUNTIME .* is not a runtime name/);
    expect(() =>
      resolveLaunch({ COTAL_LAUNCH_MATERIAL: material({ server: "x", space: "team", name: "alice", controlToken: token, runtime: "a>b" }) }),
    ).toThrow(/Invalid launch material .*runtime/);
  });

  it("starts not joined with neither form, saying what is missing when only CLI variables are set", () => {
    expect(resolveLaunch({})).toEqual({ kind: "none" });
    expect(resolveLaunch({ COTAL_SERVER: "nats://x", COTAL_SPACE: "s" })).toEqual({ kind: "none", note: expect.stringContaining("COTAL_NAME is not") });
  });
});

describe("hook registry", () => {
  it("declares every event once, with drains only on SessionStart and UserPromptSubmit, command-only", () => {
    expect(HOOKS.map((h) => h.event)).toEqual([
      "SessionStart",
      "UserPromptSubmit",
      "PreToolUse",
      "PermissionRequest",
      "Notification",
      "Stop",
      "StopFailure",
      "SessionEnd",
    ]);
    for (const h of HOOKS) {
      if (h.drains) expect(h.transports, h.event).toEqual(["command"]);
      expect(h.budgetMs, h.event).toBeLessThan(h.timeoutSec * 1000);
    }
    expect(HOOKS.filter((h) => h.drains).map((h) => h.event)).toEqual(["SessionStart", "UserPromptSubmit"]);
  });

  it("renders a settings hooks section, with http only where allowed", () => {
    const s = renderHooksSettings({ command: (e) => `node hook.mjs ${e}`, http: { url: "http://127.0.0.1:9/", tokenEnv: "COTAL_HOOK_TOKEN" } });
    expect(s.SessionStart).toEqual([{ hooks: [{ type: "command", command: "node hook.mjs SessionStart", timeout: 15 }] }]);
    expect(s.PreToolUse).toEqual([
      {
        hooks: [
          {
            type: "http",
            url: "http://127.0.0.1:9/hook/PreToolUse",
            headers: { Authorization: "Bearer $COTAL_HOOK_TOKEN" },
            allowedEnvVars: ["COTAL_HOOK_TOKEN"],
            timeout: 5,
          },
        ],
      },
    ]);
  });

  it("the hook's token alphabets agree with the wire's", () => {
    expect(SPACE_RE.source).toBe(ALPHABETS.space.re.source.replace("+$", "{1,64}$"));
    expect(PRINCIPAL_TOKEN_RE.source).toBe(ALPHABETS.principal.re.source.replace("+$", "{1,64}$"));
  });
});

// The CLI's edge, as pure functions: what a credential says of itself, the refusal that names a
// profile, and log lines for people (short, no stacks unless --debug, a repeat once a minute).
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createAccount } from "@nats-io/nkeys";
import { afterAll, describe, expect, it } from "vitest";
import { mintCreds, type Profile } from "../../broker/internal.js";
import { credentialLabel, credentialScope } from "../../cli/credential.js";
import { describeError, exitCodeOf, ProfileRefusedError, requireProfile } from "../../cli/errors.js";
import { HeldErrors, humanLine, logLineAsJson, logLineForPeople, onceAMinute, parseLogLine, withoutStacks } from "../../cli/logging.js";

const dir = mkdtempSync(join(tmpdir(), "cotal-edge-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function creds(actor: string, profile: Profile, expiresInMs?: number): Promise<string> {
  const account = createAccount();
  const { creds: bytes } = await mintCreds(
    { space: "team", who: { owner: "local", actor }, profile, ...(profile === "agent" ? { allowSubscribe: ["general"] } : {}) },
    account,
    account.getPublicKey(),
    expiresInMs,
  );
  const file = join(dir, `${actor}.creds`);
  writeFileSync(file, bytes, { mode: 0o600 });
  return file;
}

describe("what a credential says of itself", () => {
  it("names its principal, profile, space and expiry", async () => {
    const file = await creds("olga", "observer", 3_600_000);
    const scope = credentialScope(file);
    expect(scope).toMatchObject({ principal: "local.olga", profile: "observer", space: "team" });
    expect(scope!.expiresAt! - Date.now()).toBeGreaterThan(3_500_000);
    expect(credentialLabel(scope)).toBe("the observer credential of local.olga");
    expect(credentialScope(join(dir, "missing.creds"))).toBeUndefined();
  });

  it("the operator's own credential is named as such", async () => {
    const account = createAccount();
    const { creds: bytes } = await mintCreds({ space: "team", who: { owner: "local", actor: "cotal_cli" }, profile: "cli" }, account, account.getPublicKey());
    const file = join(dir, "cli.creds");
    writeFileSync(file, bytes, { mode: 0o600 });
    expect(credentialLabel(credentialScope(file))).toBe("the mesh host's operator credential");
  });
});

describe("a refusal names the profile and what it may do", () => {
  it("an admin may not send: exit 5, a sentence a person can act on", async () => {
    const file = await creds("adam", "admin");
    let caught: unknown;
    try {
      requireProfile(file, ["agent", "operator"], "send messages (post, DM or anycast)");
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ProfileRefusedError);
    expect(exitCodeOf(caught)).toBe(5);
    expect(describeError(caught)).toContain(
      "The admin credential of local.adam may not send messages (post, DM or anycast). An admin credential reads everything",
    );
  });

  it("an agent passes where agents may; no credential (an open mesh) passes too", async () => {
    const file = await creds("alice", "agent");
    expect(() => requireProfile(file, ["agent"], "x")).not.toThrow();
    expect(() => requireProfile(undefined, ["operator"], "x")).not.toThrow();
  });
});

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

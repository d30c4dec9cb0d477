// The person at the mesh host is a principal of their own (docs/security.md, People): `cotal up`
// mints them a credential named after the login user, and `send`, `listen`, `inbox`, `history` and
// `roster` run in the mesh folder act as them with no --as; other people are minted with the
// `person` profile, which speaks only as itself. All through the built CLI, on a real mesh.
import { existsSync, readFileSync, statSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { connect, credsAuthenticator, PermissionViolationError } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { credentialScope } from "../../../cli/identity/credential-scope.js";
import { buildCli, CotalProcess, freePort, runCotal, type CliResult } from "../../harness/cli.js";
import { until } from "../../../testbed/until.js";

let project: string;
let port: number;
const me = userInfo().username;
const cotal = (...args: string[]) => runCotal(args, { cwd: project, timeoutMs: 60_000 });
const ok = (r: CliResult, what: string) => {
  expect(r.code, `${what}: exit code; stderr: ${r.stderr}`).toBe(0);
  return r;
};
type HistoryRow = { from: string; text: string; message: { sentBy?: string } };

beforeAll(async () => {
  await buildCli();
  project = await mkdtemp(join(tmpdir(), "cotal-person-"));
  port = await freePort();
  ok(await cotal("up", "--detach", "--port", String(port)), "up");
}, 90_000);

afterAll(async () => {
  await runCotal(["down"], { cwd: project }).catch(() => undefined);
  await rm(project, { recursive: true, force: true });
});

describe("the person at the mesh host", () => {
  it("cotal up mints them a person credential named after the login user, 0600", () => {
    const file = join(project, ".cotal", "creds", `${me}.creds`);
    expect(credentialScope(file)).toMatchObject({ principal: `local.${me}`, profile: "person", space: "default" });
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(join(project, ".cotal", "person.json"), "utf8"))).toEqual({ name: me, space: "default" });
  });

  it("`cotal send msg general hi` works with no --as, and history shows them as the sender, not the operator", async () => {
    expect(ok(await cotal("send", "msg", "general", "hi"), "send").stdout).toMatch(/^stored seq \d+ on general/);
    const text = ok(await cotal("history", "general"), "history").stdout;
    expect(text).toMatch(new RegExp(`#general ${me}: hi  \\[seq \\d+\\]`));
    expect(text).not.toContain("sent by the operator");
    const rows = ok(await cotal("history", "general", "--json"), "history --json").json<HistoryRow[]>();
    expect(rows.map((r) => [r.from, r.text, r.message.sentBy])).toEqual([[`local.${me}`, "hi", undefined]]);
  });

  it("`cotal listen` listens as them, on the roster under their name, and shows others' posts live", async () => {
    ok(await cotal("mint", "carol", "--profile", "person"), "mint carol");
    const listen = CotalProcess.spawn(["listen", "--json", "--channel", "general"], { cwd: project });
    try {
      const ready = await listen.waitForJson<{ type: string; as?: string }>((l) => l.type === "ready", 20_000, "listen to be ready");
      expect(ready.as).toBe(`local.${me}`);
      const roster = ok(await cotal("roster", "--json"), "roster").json<Array<{ id: string; status: string }>>();
      expect(roster.find((r) => r.id === `local.${me}`)?.status).not.toBe("offline");
      ok(await cotal("send", "msg", "general", "hello from carol", "--creds", ".cotal/creds/carol.creds"), "carol posts");
      const got = await listen.waitForJson<{ type: string; from?: string; text?: string }>(
        (l) => l.type === "message" && l.text === "hello from carol",
        20_000,
        "carol's post to reach the listener",
      );
      expect(got.from).toBe("local.carol");
    } finally {
      expect((await listen.stop()).code).toBe(0);
    }
  }, 60_000);

  it("a DM to them shows in `cotal inbox`, unread until --read", async () => {
    ok(await cotal("send", "dm", me, "a note for you", "--creds", ".cotal/creds/carol.creds"), "carol DMs");
    const first = ok(await cotal("inbox"), "inbox").stdout;
    expect(first).toContain(`1 unread DM for local.${me}:`);
    expect(first).toMatch(/ dm carol: a note for you\n/);
    const json = ok(await cotal("inbox", "--json"), "inbox --json").json<{ as: string; unread: number; messages: Array<{ from: string; text: string }> }>();
    expect(json).toMatchObject({ as: `local.${me}`, unread: 1, messages: [{ from: "local.carol", text: "a note for you" }] });
    expect(ok(await cotal("inbox", "--read"), "inbox --read").stdout).toContain("Marked 1 read.");
    expect(ok(await cotal("inbox"), "inbox after --read").stdout).toBe(`No unread DMs for local.${me}.\n`);
  }, 60_000);

  it("`cotal console` as them shows their inbox: the unread count and each DM to them, left unread", async () => {
    const console = CotalProcess.spawn(["console", "--plain"], { cwd: project });
    try {
      await until(
        () => console.lines.includes(`inbox no unread DMs for local.${me}`),
        30_000,
        `the console's inbox line\n${console.lines.join("\n")}\n${console.stderr}`,
      );
      ok(await cotal("send", "dm", me, "seen in the console", "--creds", ".cotal/creds/carol.creds"), "carol DMs");
      await until(() => console.lines.includes(`inbox 1 unread DM for local.${me}`), 30_000, `the count to change\n${console.lines.join("\n")}`);
      await until(() => console.lines.some((l) => /^inbox .* dm carol: seen in the console$/.test(l)), 10_000, `the DM itself\n${console.lines.join("\n")}`);
    } finally {
      await console.stop();
    }
    // Shown, not read: `cotal inbox` still has it.
    expect(ok(await cotal("inbox", "--read"), "inbox --read").stdout).toMatch(/1 unread DM for local\.\S+:\n.* dm carol: seen in the console\n/);
  }, 90_000);

  it("speaking as someone else stays explicit: --as bob takes --impersonate, and is marked as the operator's", async () => {
    const refused = await cotal("send", "msg", "general", "as bob", "--as", "bob");
    expect(refused.code, refused.stderr).toBe(2);
    expect(refused.stderr).toContain("acting as bob means speaking for someone else");
    ok(await cotal("send", "msg", "general", "as bob", "--as", "bob", "--impersonate"), "send --impersonate");
    expect(ok(await cotal("history", "general"), "history").stdout).toContain("#general bob (sent by the operator local.cotal_cli): as bob");
  });

  it("a later `cotal up` keeps their credential; a --me that is not a name is refused, never rewritten", async () => {
    const file = join(project, ".cotal", "creds", `${me}.creds`);
    const before = statSync(file).mtimeMs;
    expect(ok(await cotal("up", "--detach"), "up again").stdout).toContain(`you:          ${me}  (credential kept`);
    expect(statSync(file).mtimeMs).toBe(before);
    const bad = await cotal("up", "--detach", "--me", "first.last");
    expect(bad.code, bad.stderr).toBe(2);
    expect(bad.stderr).toContain("--me name must use only letters, digits and '_' (got \"first.last\")");
    expect(existsSync(join(project, ".cotal", "creds", "first.last.creds"))).toBe(false);
  }, 60_000);
});

describe("a person minted with --profile person", () => {
  it("posts as itself; the broker refuses a post as anyone else", async () => {
    const creds = join(project, ".cotal", "creds", "carol.creds");
    expect(credentialScope(creds)).toMatchObject({ principal: "local.carol", profile: "person" });
    ok(await cotal("send", "msg", "builds", "carol on builds", "--creds", creds), "carol posts on any channel");
    const rows = ok(await cotal("history", "builds", "--json"), "history").json<HistoryRow[]>();
    expect(rows.map((r) => [r.from, r.text])).toEqual([["local.carol", "carol on builds"]]);
    // A person has a fixed view and no role or plane: refused as bad input, nothing minted.
    for (const flags of [["--role", "reviewer"], ["--allow-subscribe", "general"], ["--events"]]) {
      const r = await cotal("mint", "dave", "--profile", "person", ...flags);
      expect([flags[0], r.code], r.stderr).toEqual([flags[0], 2]);
    }
    expect(existsSync(join(project, ".cotal", "creds", "dave.creds"))).toBe(false);
    const asBob = await cotal("send", "msg", "general", "not carol", "--as", "bob", "--creds", creds);
    expect(asBob.code, asBob.stderr).toBe(2);
    expect(asBob.stderr).toContain("This credential is local.carol's: it cannot act as bob.");
    // Past the CLI, on a raw connection: the broker itself pins the sender.
    const nc = await connect({ servers: `nats://127.0.0.1:${port}`, authenticator: credsAuthenticator(readFileSync(creds)) });
    try {
      const seen: PermissionViolationError[] = [];
      void (async () => {
        for await (const s of nc.status()) if (s.type === "error" && s.error instanceof PermissionViolationError) seen.push(s.error);
      })();
      for (const subject of ["cotal.default.chat.local.bob.general", `cotal.default.chat.local.${me}.general`, "cotal.default.inst.local.bob.local.dave"])
        nc.publish(subject, "{}");
      nc.publish("cotal.default.chat.local.carol.general", "{}");
      await nc.flush();
      await nc.flush();
      expect(seen.map((e) => e.subject).sort()).toEqual(
        ["cotal.default.chat.local.bob.general", `cotal.default.chat.local.${me}.general`, "cotal.default.inst.local.bob.local.dave"].sort(),
      );
    } finally {
      await nc.close();
    }
  }, 60_000);
});

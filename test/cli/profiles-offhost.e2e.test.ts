// Off the mesh host: a folder holding nothing but a .creds file. Each profile's credential runs
// every everyday command and gets either its answer or a refusal that names the profile (exit 5);
// each kind of refused credential has its own message and exit code (4); nothing hangs.
import { copyFileSync, readFileSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildCli, cleanEnv, CotalProcess, freePort, runCotal, type CliResult } from "../harness/cli.js";
import { until } from "../../testbed/until.js";

let project: string;
let away: string;
let server: string;
const host = (...args: string[]) => runCotal(args, { cwd: project });
/** A command run in the folder that holds only credentials, against the mesh by address. */
const off = (creds: string, args: string[], input?: string) =>
  runCotal([...args, "--server", server, "--creds", creds], { cwd: away, env: cleanEnv(), timeoutMs: 20_000, ...(input !== undefined ? { input } : {}) });
const ok = (r: CliResult, what: string) => expect(r.code, `${what}: exit code; stderr: ${r.stderr}`).toBe(0);

beforeAll(async () => {
  await buildCli();
  project = await mkdtemp(join(tmpdir(), "cotal-offhost-"));
  away = await mkdtemp(join(tmpdir(), "cotal-away-"));
  const port = await freePort();
  server = `nats://127.0.0.1:${port}`;
  ok(await host("up", "--detach", "--port", String(port)), "up");
  const mint = async (name: string, ...flags: string[]) => ok(await host("mint", name, "--out", join(away, `${name}.creds`), ...flags), `mint ${name}`);
  await mint("alice", "--profile", "agent", "--allow-subscribe", "general", "--allow-publish", "general", "--provision");
  await mint("olga", "--profile", "observer");
  await mint("pat", "--profile", "person");
  await mint("adam", "--profile", "admin");
}, 60_000);

afterAll(async () => {
  await host("down").catch(() => undefined);
  await rm(project, { recursive: true, force: true });
  await rm(away, { recursive: true, force: true });
});

const PROFILES = [
  { profile: "agent", creds: "alice.creds", principal: "local.alice", sends: true },
  { profile: "person", creds: "pat.creds", principal: "local.pat", sends: true },
  { profile: "observer", creds: "olga.creds", principal: "local.olga", sends: false },
  { profile: "admin", creds: "adam.creds", principal: "local.adam", sends: false },
] as const;

describe("every profile off the mesh host", () => {
  for (const p of PROFILES) {
    it(`${p.profile}: roster, history, status and channels list answer`, async () => {
      ok(await off(p.creds, ["roster"]), "roster");
      ok(await off(p.creds, ["history", "general"]), "history");
      const status = await off(p.creds, ["status", "--json"]);
      ok(status, "status");
      expect(status.json()).toMatchObject({ reachable: true, mode: "static", meshService: { answering: true } });
      expect(status.json<{ streamsHidden?: string }>().streamsHidden).toContain(`the ${p.profile} credential of ${p.principal} may not read stream state`);
      const list = await off(p.creds, ["channels", "list", "--json"]);
      ok(list, "channels list");
      expect(list.json()).toHaveProperty("defaults");
    });

    it(`${p.profile}: send and listen ${p.sends ? "work" : "are refused, naming the profile (exit 5)"}`, async () => {
      const send = await off(p.creds, ["send", "msg", "general", `hello from ${p.profile}`]);
      if (p.sends) {
        ok(send, "send");
        expect(send.stdout).toMatch(/^stored seq \d+ on general/);
        const listen = CotalProcess.spawn(["listen", "--json", "--channel", "general", "--server", server, "--creds", p.creds], { cwd: away });
        try {
          await listen.waitForJson<{ type: string }>((l) => l.type === "ready", 15_000, "listen to be ready");
        } finally {
          expect((await listen.stop()).code).toBe(0);
        }
      } else {
        expect(send.code, send.stderr).toBe(5);
        expect(send.stderr).toContain(`The ${p.profile} credential of ${p.principal} may not send messages`);
        const listen = await off(p.creds, ["listen"]);
        expect(listen.code, listen.stderr).toBe(5);
        expect(listen.stderr).toContain(`The ${p.profile} credential of ${p.principal} may not join the mesh as someone`);
      }
    });

    it(`${p.profile}: no call is made that the broker refuses (its log shows no violation)`, () => {
      const log = readFileSync(join(project, ".cotal", "logs", "nats-server.log"), "utf8");
      expect(log.split("\n").filter((l) => /Violation/.test(l))).toEqual([]);
    });

    it(`${p.profile}: operator-only commands are refused, naming the profile (exit 5)`, async () => {
      for (const args of [
        ["deliver", "pending", "bob"],
        ["channels", "set", "general", "--no-replay"],
        ["mint", "zed", "--profile", "agent"],
      ]) {
        const r = await off(p.creds, args);
        expect([args.join(" "), r.code], r.stderr).toEqual([args.join(" "), 5]);
        expect(r.stderr).toContain(`The ${p.profile} credential of ${p.principal} may not`);
      }
    });
  }
});

describe("each refused credential says why, with its own exit code", () => {
  it("no credential at all: exit 4, 'requires a credential', not 'start the mesh'", async () => {
    const r = await runCotal(["roster", "--server", server], { cwd: away, env: cleanEnv() });
    expect(r.code, r.stderr).toBe(4);
    expect(r.stderr).toContain("requires a credential and none was given");
    expect(r.stderr).not.toContain("cotal up");
  });

  it("a missing creds file: exit 2, naming the file", async () => {
    const r = await off("nope.creds", ["roster"]);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain('--creds: "nope.creds" is not a file');
  });

  it("a credential of another space: exit 4 before anything hangs", async () => {
    const r = await runCotal(["send", "msg", "general", "hi", "--space", "other", "--server", server, "--creds", "alice.creds"], {
      cwd: away,
      env: cleanEnv(),
      timeoutMs: 20_000,
    });
    expect(r.code, r.stderr).toBe(4);
    expect(r.stderr).toContain('was minted for space "default", not "other"');
  });

  it("an expired credential: exit 4, 'it expired'", async () => {
    ok(await host("mint", "ephemeral", "--profile", "observer", "--expires-in", "1s", "--out", join(away, "ephemeral.creds")), "mint");
    await new Promise((r) => setTimeout(r, 2_100)); // the credential's own expiry, not a guess at timing
    const r = await off("ephemeral.creds", ["roster"]);
    expect(r.code, r.stderr).toBe(4);
    expect(r.stderr).toContain("refused the observer credential of local.ephemeral: it expired at");
  });

  it("a revoked credential: exit 4, 'it was revoked' (the mesh host can tell for sure)", async () => {
    ok(await host("mint", "gone", "--profile", "observer", "--out", join(away, "gone.creds")), "mint");
    ok(await off("gone.creds", ["roster"]), "before revoking");
    ok(await host("revoke", "gone"), "revoke");
    const r = await off("gone.creds", ["roster"]);
    expect(r.code, r.stderr).toBe(4);
    expect(r.stderr).toContain("it was revoked, or it was minted by another mesh");
    const onHost = await runCotal(["roster", "--creds", join(away, "gone.creds")], { cwd: project });
    expect(onHost.code, onHost.stderr).toBe(4);
    expect(onHost.stderr).toMatch(/it was revoked\. /);
  });

  it("a listener whose credential is revoked says so in one line and leaves with exit 4", async () => {
    ok(await host("mint", "lena", "--profile", "agent", "--allow-subscribe", "general", "--provision", "--out", join(away, "lena.creds")), "mint");
    const listen = CotalProcess.spawn(["listen", "--json", "--server", server, "--creds", "lena.creds"], { cwd: away });
    await listen.waitForJson<{ type: string }>((l) => l.type === "ready", 15_000, "listen to be ready");
    ok(await host("revoke", "lena"), "revoke");
    expect((await listen.exited).code, listen.stderr).toBe(4);
    expect(listen.stderr).toContain("The mesh refused this credential (local.lena): it was revoked or it expired; leaving.");
    expect(listen.stderr).not.toMatch(/\n\s+at /); // no stack trace
  });

  it("an agent posting outside its --allow-publish: the broker's refusal names the profile and the subject (exit 5)", async () => {
    const r = await off("alice.creds", ["send", "msg", "secret", "psst"]);
    expect(r.code, r.stderr).toBe(5);
    expect(r.stderr).toContain("The agent credential of local.alice may not publish on cotal.default.chat.local.alice.secret: the broker refused it.");
    // For people: short text lines, no JSON, no stack (JSON comes with --log-format json or off a terminal).
    const text = await off("alice.creds", ["send", "msg", "secret", "psst", "--log-format", "text"]);
    expect(text.code).toBe(5);
    expect(text.stderr).not.toMatch(/^\{/m);
    expect(text.stderr).not.toMatch(/\n\s+at /);
    // Said once: the sentence, not the endpoint's log line of the same refusal as well.
    expect(text.stderr.trimEnd().split("\n"), text.stderr).toHaveLength(1);
    const h = await off("alice.creds", ["history", "secret"]);
    expect(h.code, h.stderr).toBe(5);
    expect(h.stderr).toContain("Not allowed to read channel secret");
  });

  it("an http:// server is refused as bad input", async () => {
    const r = await runCotal(["roster", "--server", server.replace("nats:", "http:"), "--creds", "alice.creds"], { cwd: away, env: cleanEnv() });
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain("is not a server address");
  });
});

describe("duplicates are never silent", () => {
  it("minting a name again refuses; --replace revokes the old credential, which the broker then refuses", async () => {
    const again = await host("mint", "alice", "--profile", "agent", "--out", join(away, "alice.creds"));
    expect(again.code, again.stderr).toBe(2);
    expect(again.stderr).toContain("would leave the old one valid");
    copyFileSync(join(away, "alice.creds"), join(away, "alice-old.creds"));
    const replaced = await host(
      "mint",
      "alice",
      "--profile",
      "agent",
      "--allow-subscribe",
      "general",
      "--allow-publish",
      "general",
      "--out",
      join(away, "alice.creds"),
      "--replace",
    );
    ok(replaced, "mint --replace");
    expect(replaced.stdout).toContain("replaced:  revoked 1 old credential of local.alice");
    const old = await off("alice-old.creds", ["send", "msg", "general", "from the old credential"]);
    expect(old.code, old.stderr).toBe(4);
    ok(await off("alice.creds", ["send", "msg", "general", "from the new credential"]), "the new credential");
  });

  it("a second listen of the same name is refused; --takeover makes the first leave", async () => {
    const first = CotalProcess.spawn(["listen", "--json", "--server", server, "--creds", "alice.creds"], { cwd: away });
    try {
      await first.waitForJson<{ type: string }>((l) => l.type === "ready", 15_000, "the first listen to be ready");
      // The roster must show the first listener online before the second can be refused for it.
      await until(async () => (await off("alice.creds", ["roster", "--json"])).stdout.includes('"local.alice"'), 10_000, "alice to show in the roster");
      const second = await off("alice.creds", ["listen"]);
      expect(second.code, second.stderr).toBe(1);
      expect(second.stderr).toContain("local.alice is already listening");
      expect(second.stderr).toContain("--takeover");
      const third = CotalProcess.spawn(["listen", "--json", "--takeover", "--server", server, "--creds", "alice.creds"], { cwd: away });
      try {
        await third.waitForJson<{ type: string }>((l) => l.type === "ready", 15_000, "the taking-over listen to be ready");
        expect((await first.exited).code).toBe(0);
        expect(first.stderr).toContain("now listens as local.alice; leaving");
        // The first one's goodbye (offline) does not stand for the one that took over.
        await until(
          async () =>
            (await off("olga.creds", ["roster", "--json"]))
              .json<Array<{ id: string; status: string }>>()
              .some((e) => e.id === "local.alice" && e.status !== "offline"),
          10_000,
          "alice to show online again after the takeover",
        );
      } finally {
        await third.stop();
      }
    } finally {
      await first.stop();
    }
  });
});

describe("send --file and standard input", () => {
  it("round-trip a few KB byte-identical through listen and history; an over-limit text points to --attach", async () => {
    const text = Array.from({ length: 120 }, (_, i) => `line ${i}\t"quoted" ünïcödé ${"x".repeat(i % 40)}`).join("\n") + "\n";
    const file = join(away, "note.txt");
    writeFileSync(file, text);
    // Someone else listens (one's own posts are not delivered back to oneself).
    ok(await host("mint", "bea", "--profile", "agent", "--allow-subscribe", "general", "--provision", "--out", join(away, "bea.creds")), "mint bea");
    const listen = CotalProcess.spawn(["listen", "--json", "--channel", "general", "--server", server, "--creds", "bea.creds"], { cwd: away });
    try {
      await listen.waitForJson<{ type: string }>((l) => l.type === "ready", 15_000, "listen to be ready");
      ok(await off("alice.creds", ["send", "msg", "general", "--file", file]), "send --file");
      ok(await off("alice.creds", ["send", "msg", "general", "-"], text), "send -");
      await until(
        () => listen.jsonLines<{ type: string; text?: string }>().filter((l) => l.type === "message" && l.text === text).length === 2,
        15_000,
        "both copies to arrive",
      );
    } finally {
      await listen.stop();
    }
    const history = await off("olga.creds", ["history", "general", "--json"]);
    ok(history, "history");
    expect(history.json<Array<{ text: string }>>().filter((h) => h.text === text)).toHaveLength(2);

    const big = await off("alice.creds", ["send", "msg", "general", "-"], "a".repeat(300_000));
    expect(big.code, big.stderr).toBe(2);
    expect(big.stderr).toContain("over the limit of 262144 bytes");
    expect(big.stderr).toContain("--attach");
  });
});

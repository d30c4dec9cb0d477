// `cotal up` without --open: a static-auth mesh, driven through the shipped bundle: secrets
// on disk, the status it reports, minting, acting with a minted credential, and revocation.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildCli, cleanEnv, CotalProcess, freePort, runCotal, type CliResult } from "../harness/cli.js";
import { until } from "../../testbed/until.js";

let project: string;
let port: number;
const cotal = (...args: string[]) => runCotal(args, { cwd: project });
const ok = (r: CliResult) => expect(r.code, `exit code; stderr: ${r.stderr}`).toBe(0);

beforeAll(async () => {
  await buildCli();
  project = await mkdtemp(join(tmpdir(), "cotal-static-"));
  port = await freePort();
});

afterAll(async () => {
  await runCotal(["down"], { cwd: project }).catch(() => undefined);
  await rm(project, { recursive: true, force: true });
});

describe("a static mesh from the CLI", () => {
  it("up (no --open) starts an operator-mode server with secrets kept 0600/0700", async () => {
    const r = await cotal("up", "--detach", "--port", String(port), "--json");
    ok(r);
    expect(r.json<{ mode: string }>().mode).toBe("static");
    const auth = join(project, ".cotal", "auth");
    const walk = (d: string): string[] =>
      readdirSync(d).flatMap((f) => (statSync(join(d, f)).isDirectory() ? [join(d, f), ...walk(join(d, f))] : [join(d, f)]));
    const paths = [auth, ...walk(auth)];
    expect(paths.some((p) => p.endsWith("cli.creds"))).toBe(true);
    for (const p of paths) expect([p, (statSync(p).mode & 0o777).toString(8)]).toEqual([p, statSync(p).isDirectory() ? "700" : "600"]);
    // nothing secret on any command line of the processes it started
    for (const name of ["nats-server", "mesh-service"]) {
      const { pid } = JSON.parse(readFileSync(join(project, ".cotal", "run", `${name}.json`), "utf8")) as { pid: number };
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8");
      expect(cmdline).not.toMatch(/S[OAU][A-Z2-7]{50,}|eyJ[A-Za-z0-9_-]{10,}\./);
    }
    // The mesh service and the manager run from the services' own bundle, not the whole CLI's,
    // with a small young generation (cli/mesh-host/service-process.ts).
    for (const name of ["mesh-service", "manager"]) {
      const { pid } = JSON.parse(readFileSync(join(project, ".cotal", "run", `${name}.json`), "utf8")) as { pid: number };
      const argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
      expect([name, argv.slice(1, 3).map((a) => basename(a))]).toEqual([name, ["--max-semi-space-size=2", "cotal-service.mjs"]]);
    }
    expect(readFileSync(join(project, ".cotal", "logs", "mesh-service.log"), "utf8")).not.toMatch(/S[OAU][A-Z2-7]{50,}|eyJ[A-Za-z0-9_-]{10,}\./);
  });

  it("status reports static mode and that the server requires authentication", async () => {
    const r = await cotal("status", "--json");
    ok(r);
    expect(r.json()).toMatchObject({ mode: "static", authRequired: true, reachable: true, meshService: { answering: true } });
  });

  it("a client without credentials is refused: authentication (exit 4), not 'start the mesh'", async () => {
    const r = await runCotal(["roster", "--server", `nats://127.0.0.1:${port}`, "--space", "default"], { cwd: tmpdir(), env: cleanEnv() });
    expect(r.code).toBe(4);
    expect(r.stderr).toContain("requires a credential and none was given");
    expect(r.stderr).not.toContain("cotal up");
  });

  it("mint writes a 0600 credential; the agent acts as itself within its scope only", async () => {
    const r = await cotal("mint", "alice", "--profile", "agent", "--allow-publish", "general", "--allow-subscribe", "general", "--provision", "--json");
    ok(r);
    const minted = r.json<{ principal: string; creds: string; provisioned: boolean }>();
    expect(minted).toMatchObject({ principal: "local.alice", provisioned: true });
    expect((statSync(minted.creds).mode & 0o777).toString(8)).toBe("600");

    ok(await cotal("send", "msg", "general", "hello from alice", "--as", "alice", "--creds", minted.creds));
    const denied = await cotal("send", "msg", "secret", "nope", "--as", "alice", "--creds", minted.creds);
    expect(denied.code).toBe(5);
    // Said once, as a sentence naming the subject and the broker (not a raw log line beside it).
    expect(denied.stderr).toMatch(/may not publish on cotal\.default\.chat\.local\.alice\.secret: the broker refused it/);
    const forged = await cotal("send", "msg", "general", "I am bob", "--as", "bob", "--creds", minted.creds);
    expect(forged.code).toBe(2);
    expect(forged.stderr).toContain("This credential is local.alice's: it cannot act as bob");

    const h = await cotal("history", "general", "--json");
    ok(h);
    expect(JSON.stringify(h.json())).toContain("hello from alice");
    expect(JSON.stringify(h.json())).not.toContain("I am bob");
    // alice reads history with her own credential, within her scope only (the mesh service serves it).
    const mine = await cotal("history", "general", "--json", "--creds", minted.creds);
    ok(mine);
    expect(JSON.stringify(mine.json())).toContain("hello from alice");
    const outside = await cotal("history", "secret", "--creds", minted.creds);
    expect(outside.code).not.toBe(0);
    expect(outside.stderr).toContain("Not allowed to read channel secret");
  });

  it("the operator speaks for a name only with --impersonate, and every view says so", async () => {
    const bare = await cotal("send", "dm", "dave", "from the operator", "--as", "carol");
    expect(bare.code).toBe(2);
    expect(bare.stderr).toContain("Add --impersonate to do it on purpose");
    const dave = (await cotal("mint", "dave", "--profile", "agent", "--allow-subscribe", "general", "--provision", "--json")).json<{ creds: string }>();
    const listen = CotalProcess.spawn(["listen", "--channel", "general", "--creds", dave.creds], { cwd: project });
    try {
      await until(() => listen.stderr.includes("Listening as local.dave"), 15_000, `listen to start\n${listen.stderr}`);
      ok(await cotal("send", "dm", "dave", "on carol's behalf", "--as", "carol", "--impersonate"));
      await until(() => listen.lines.some((l) => l.includes("on carol's behalf")), 10_000, "dave's listener to print the DM");
      expect(listen.lines.find((l) => l.includes("on carol's behalf"))).toContain("dm carol (sent by the operator local.cotal_cli): on carol's behalf");
    } finally {
      await listen.stop("SIGINT").catch(() => undefined);
    }
    ok(await cotal("send", "msg", "general", "a post for carol", "--as", "carol", "--impersonate"));
    const h = await cotal("history", "general");
    expect(h.stdout).toContain("carol (sent by the operator local.cotal_cli): a post for carol");
    const json = (await cotal("history", "general", "--json")).json<Array<{ text: string; message: { sentBy?: string } }>>();
    expect(json.find((m) => m.text === "a post for carol")?.message.sentBy).toBe("local.cotal_cli");
    // A minted credential cannot impersonate at all.
    const agent = await cotal("send", "msg", "general", "x", "--impersonate", "--creds", dave.creds);
    expect(agent.code).toBe(2);
    expect(agent.stderr).toContain("--impersonate needs the mesh host's operator credential");
  });

  it("an observer cannot be scoped; mint explains what to use instead", async () => {
    const r = await cotal("mint", "o", "--profile", "observer", "--allow-subscribe", "general");
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/fixed view/);
    expect(r.stderr).toContain("--profile reader");
  });

  it("mint refuses an event plane in --allow-publish (it would mint a channel of that name, not the plane), naming --events, and writes nothing", async () => {
    const own = await cotal("mint", "bot", "--profile", "agent", "--allow-publish", "events.local.bot");
    expect(own.code).toBe(2);
    expect(own.stderr).toContain("events.local.bot is bot's event plane, not a channel: pass --events instead (`cotal mint bot --profile agent --events`)");
    const other = await cotal("mint", "bot", "--profile", "agent", "--allow-publish", "general,events.local.alice");
    expect(other.code).toBe(2);
    expect(other.stderr).toContain(
      "events.local.alice is the event plane of local.alice, not a channel: a credential may publish only its own event plane, with --events",
    );
    expect(readdirSync(join(project, ".cotal", "creds")).filter((f) => f.startsWith("bot"))).toEqual([]);
  });

  it("mint --on <host>: a person on a leaf host; refused for a host with no leaf credential and for a profile that does not run there", async () => {
    const noLeaf = await cotal("mint", "lucy", "--profile", "agent", "--on", "nohost", "--out", join(project, "lucy.creds"));
    expect(noLeaf.code, noLeaf.stderr).toBe(1);
    expect(noLeaf.stderr).toContain("local.nohost_leaf is not a leaf credential of this space");
    expect(noLeaf.stderr).toContain("cotal mint nohost_leaf --profile leaf");
    ok(await cotal("mint", "hostz_leaf", "--profile", "leaf", "--out", join(project, "hostz_leaf.creds")));
    const admin = await cotal("mint", "boss", "--profile", "admin", "--on", "hostz", "--out", join(project, "boss.creds"));
    expect(admin.code, admin.stderr).toBe(2);
    expect(admin.stderr).toContain("an admin does not run on a leaf host: --on applies to agents, readers and observers");
    const r = await cotal(
      "mint",
      "lucy",
      "--profile",
      "agent",
      "--allow-subscribe",
      "general",
      "--on",
      "hostz",
      "--out",
      join(project, "lucy.creds"),
      "--json",
    );
    ok(r);
    expect(r.json()).toMatchObject({ principal: "local.lucy", on: "hostz" });
    // Revoking the leaf revokes what runs on its host: lucy's credential with it.
    expect((await cotal("revoke", "hostz_leaf", "--json")).json()).toMatchObject({ revoked: 2 });
  });

  it("a reader (the scoped reader) reads its scope and sends nothing", async () => {
    const bad = await cotal("mint", "w2", "--profile", "reader", "--allow-subscribe", "general", "--allow-publish", "general");
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("A reader publishes nothing: --allow-publish applies to agents only");
    const r = await cotal("mint", "watcher", "--profile", "reader", "--allow-subscribe", "general,events.local.alice", "--provision");
    ok(r);
    expect(r.stdout).toContain("principal: local.watcher (reader)");
    expect(r.stdout).toMatch(/^joined: +general \(durable memberships\)$/m);
    const creds = join(project, ".cotal", "creds", "watcher.creds");
    const mine = await cotal("history", "general", "--json", "--creds", creds);
    ok(mine);
    expect(JSON.stringify(mine.json())).toContain("hello from alice");
    const outside = await cotal("history", "secret", "--creds", creds);
    expect(outside.code).not.toBe(0);
    expect(outside.stderr).toContain("Not allowed to read channel secret");
    // Refused before anything is sent, naming what a reader may do.
    const send = await cotal("send", "msg", "general", "from a reader", "--creds", creds);
    expect(send.code).toBe(5);
    expect(send.stderr).toContain("The reader credential of local.watcher may not send messages");
    expect(send.stderr).toContain("A reader credential reads its --allow-subscribe channels");
  });

  it("revoke cuts a listening identity and refuses it afterwards", async () => {
    const minted = (await cotal("mint", "bob", "--profile", "agent", "--allow-subscribe", "general", "--json")).json<{ creds: string }>();
    const listen = CotalProcess.spawn(["listen", "--as", "bob", "--channel", "general", "--creds", minted.creds], { cwd: project });
    try {
      await until(() => listen.stderr.includes("Listening as local.bob"), 15_000, `listen to start\n${listen.stderr}`);
      const r = await cotal("revoke", "bob", "--json");
      ok(r);
      expect(r.json()).toEqual({ principal: "local.bob", revoked: 1 });
      await until(() => listen.child.exitCode !== null, 15_000, `the revoked listener to be cut off and exit\n${listen.stderr}`);
      expect(listen.stderr).toContain("The mesh refused this credential (local.bob): it was revoked or it expired; leaving.");
      expect(listen.child.exitCode).toBe(4);
      const again = await cotal("roster", "--creds", minted.creds);
      expect(again.code).toBe(4);
      expect(again.stderr).toContain("it was revoked. "); // on the mesh host the CLI can tell for sure
    } finally {
      if (listen.child.exitCode === null) await listen.stop("SIGKILL").catch(() => undefined);
    }
  });

  it("down stops the static mesh", async () => {
    ok(await cotal("down"));
  });
});

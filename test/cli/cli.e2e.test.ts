// The shipped `cotal` bundle, end to end, against real nats-servers it starts itself: up,
// status, idempotent up and repair, send/listen/history/roster/channels/deliver, bad input,
// down, and a foreground up stopped by Ctrl-C. Every mesh gets an explicit free port.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildCli, cleanEnv, CotalProcess, freePort, pidAlive, runCotal, type CliResult } from "../harness/cli.js";
import { until } from "../../testbed/until.js";

interface PidRecord {
  pid: number;
  startTime: string;
}

const projects: string[] = [];

async function newProject(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "cotal-cli-"));
  projects.push(dir);
  return dir;
}

function pidOf(project: string, name: "nats-server" | "mesh-service"): PidRecord {
  return JSON.parse(readFileSync(join(project, ".cotal", "run", `${name}.json`), "utf8")) as PidRecord;
}

/** nats-server processes started for our temp projects (never the shared one on 4222). */
function ourNatsServers(): string[] {
  let out: string;
  try {
    out = execFileSync("pgrep", ["-a", "nats-server"], { encoding: "utf8" });
  } catch {
    return []; // pgrep exits 1 when nothing matches
  }
  return out.split("\n").filter((l) => projects.some((p) => l.includes(p)));
}

function expectOk(r: CliResult): void {
  expect(r.code, `exit code; stderr: ${r.stderr}`).toBe(0);
}

beforeAll(async () => {
  await buildCli();
});

afterAll(async () => {
  for (const p of projects) {
    if (existsSync(join(p, ".cotal", "mesh.json"))) await runCotal(["down"], { cwd: p }).catch(() => undefined);
  }
  const left = ourNatsServers();
  for (const p of projects) await rm(p, { recursive: true, force: true });
  expect(left, "nats-servers left running by the CLI tests").toEqual([]);
});

describe("a detached mesh", () => {
  let project: string;
  let port: number;
  const cotal = (...args: string[]) => runCotal(args, { cwd: project });

  beforeAll(async () => {
    project = await newProject();
    port = await freePort();
  });

  it("up --open --detach starts nats-server and the mesh service and writes .cotal/mesh.json", async () => {
    const r = await cotal("up", "--open", "--detach", "--port", String(port), "--json");
    expectOk(r);
    const report = r.json<{ server: string; natsServer: { state: string; pid: number }; meshService: { state: string; pid: number } }>();
    expect(report.natsServer.state).toBe("started");
    expect(report.meshService.state).toBe("started");
    const info = JSON.parse(readFileSync(join(project, ".cotal", "mesh.json"), "utf8")) as Record<string, unknown>;
    expect(info).toMatchObject({ server: `nats://127.0.0.1:${port}`, space: "default", mode: "open", host: "127.0.0.1", port });
    expect(info.storeDir).toBe(join(project, ".cotal", "jetstream"));
    expect(typeof info.startedAt).toBe("string");
    for (const name of ["nats-server", "mesh-service"] as const) {
      const rec = pidOf(project, name);
      expect(pidAlive(rec.pid), `${name} pid ${rec.pid} alive`).toBe(true);
      expect(rec.startTime).toMatch(/^\d+$/);
    }
    expect(readFileSync(join(project, ".cotal", "nats-server.conf"), "utf8")).toContain(`listen: "127.0.0.1:${port}"`);
  });

  it("status --json shows the server reachable with its four streams", async () => {
    const r = await cotal("status", "--json");
    expectOk(r);
    const s = r.json<{
      reachable: boolean;
      mode: string;
      space: string;
      meshService: { answering: boolean };
      streams: Array<{ name: string; exists: boolean; messages: number }>;
    }>();
    expect(s.reachable).toBe(true);
    expect(s.mode).toBe("open");
    expect(s.meshService.answering).toBe(true);
    expect(s.streams.map((x) => [x.name, x.exists])).toEqual([
      ["CHAT_default", true],
      ["DM_default", true],
      ["TASK_default", true],
      ["SEATS_default", true],
    ]);
  });

  it("a second up finds the running mesh and starts nothing", async () => {
    const before = [pidOf(project, "nats-server").pid, pidOf(project, "mesh-service").pid];
    const r = await cotal("up", "--open", "--detach");
    expectOk(r);
    expect(r.stdout).toContain("nats-server already running");
    expect(r.stdout).toMatch(/mesh service: already running/);
    expect([pidOf(project, "nats-server").pid, pidOf(project, "mesh-service").pid]).toEqual(before);
  });

  it("up refuses to change the port of a running mesh", async () => {
    const r = await cotal("up", "--open", "--detach", "--port", String(await freePort()));
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("already running with other settings");
    expect(r.stderr).toContain("cotal down");
  });

  it("up repairs a mesh service that was killed", async () => {
    const dead = pidOf(project, "mesh-service").pid;
    process.kill(dead, "SIGKILL");
    await until(() => !pidAlive(dead), 5_000, `mesh service pid ${dead} to die`);
    const down = await cotal("status", "--json");
    expect(down.code).toBe(6); // reachable server, silent mesh service
    expect(down.json<{ meshService: { answering: boolean } }>().meshService.answering).toBe(false);

    const r = await cotal("up", "--open", "--detach", "--json");
    expectOk(r);
    const report = r.json<{ natsServer: { state: string }; meshService: { state: string; pid: number }; notes: string[] }>();
    expect(report.natsServer.state).toBe("running");
    expect(report.meshService.state).toBe("repaired");
    expect(report.meshService.pid).not.toBe(dead);
    expect(report.notes.join(" ")).toContain(`pid ${dead} was gone`);
    expect(pidAlive(report.meshService.pid)).toBe(true);
    expectOk(await cotal("status"));
  });

  it("send dm before the recipient joined says it has not joined yet, and deliver pending counts it", async () => {
    const r = await cotal("send", "dm", "bob", "hello", "before", "you", "joined", "--as", "alice");
    expectOk(r);
    expect(r.stdout.trim()).toMatch(/^stored seq \d+; recipient has not joined yet; it will be delivered on first join$/);
    expect(r.stdout).not.toContain("delivered to");

    const p = await cotal("deliver", "pending", "bob", "--json");
    expectOk(p);
    expect(p.json()).toMatchObject({ recipient: "local.bob", joined: false, waiting: 1 });
    const text = await cotal("deliver", "pending", "bob");
    expect(text.stdout).toContain("has not joined yet");
    expect(text.stdout).toContain("1 DM stored for them");
  });

  it("listen --json as bob gets the waiting DM, a live DM and a channel post, and acks them", async () => {
    const listen = CotalProcess.spawn(["listen", "--as", "bob", "--channel", "general", "--json"], { cwd: project });
    try {
      await listen.waitForJson((l) => l.type === "ready", 15_000, "listen to say it is ready");
      const roster = await cotal("roster", "--json");
      expectOk(roster);
      expect(roster.json<Array<{ id: string; status: string }>>()).toEqual(
        expect.arrayContaining([expect.objectContaining({ id: "local.bob", status: "idle" })]),
      );

      const dm = await cotal("send", "dm", "bob", "live dm", "--as", "alice", "--json");
      expectOk(dm);
      // --json: the receipt as data, and the line people read.
      expect(dm.json<{ target: unknown; text: string }>()).toMatchObject({
        target: { kind: "dm", to: "local.bob", recipient: "idle" },
        text: expect.stringMatching(/recipient idle at send$/),
      });
      expectOk(await cotal("send", "msg", "general", "hello", "channel", "--as", "alice", "--mention", "bob"));

      const waiting = await listen.waitForJson((l) => l.type === "message" && l.text === "hello before you joined", 10_000, "the waiting DM");
      expect(waiting).toMatchObject({ kind: "dm", from: "local.alice", historical: false });
      await listen.waitForJson((l) => l.type === "message" && l.text === "live dm", 10_000, "the live DM");
      const post = await listen.waitForJson((l) => l.type === "message" && l.kind === "channel", 10_000, "the channel post");
      expect(post).toMatchObject({ channel: "general", text: "hello channel", from: "local.alice" });
      expect((post.message as { mentions?: string[] }).mentions).toEqual(["bob"]);

      // Each delivery was acked after it was printed: nothing stays pending on bob's inbox.
      let pending: Record<string, unknown> = {};
      await until(
        async () => {
          pending = (await cotal("deliver", "pending", "bob", "--json")).json();
          return pending.pending === 0 && pending.ackPending === 0;
        },
        10_000,
        "bob's DM inbox to be fully acknowledged",
      );
      expect(pending).toMatchObject({ joined: true, durable: "dm_local-bob", lastDeliveredSeq: 2 });
      expect(pending.oldestUnacked).toBeNull(); // every key is there, null when it does not apply
    } finally {
      const exit = await listen.stop("SIGINT");
      expect(exit.code).toBe(0);
    }
    expect(listen.jsonLines().at(-1)).toMatchObject({ type: "left", as: "local.bob" });
    const roster = (await cotal("roster", "--json")).json<Array<{ id: string; status: string }>>();
    expect(roster.find((e) => e.id === "local.bob")?.status ?? "offline").toBe("offline");
  });

  it("deliver pending shows what waits in the inbox of a recipient who is away, and its age", async () => {
    expectOk(await cotal("send", "dm", "carol", "not for bob", "--as", "alice")); // another inbox's DM in between
    const sent = (await cotal("send", "dm", "bob", "while you were away", "--as", "alice", "--json")).json<{ seq: number; target: unknown }>();
    expect(sent.target).toEqual({ kind: "dm", to: "local.bob", recipient: "offline" });
    const p = (await cotal("deliver", "pending", "bob", "--json")).json<Record<string, unknown>>();
    expect(p).toMatchObject({ joined: true, pending: 1, ackPending: 0, oldestUnacked: { seq: sent.seq } });
    // The inbox's cursor in DM_: at least bob's last DM, never the one still waiting.
    expect(p.lastDeliveredSeq).toBeGreaterThanOrEqual(2);
    expect(p.lastDeliveredSeq).toBeLessThan(sent.seq);
    expect((p.oldestUnacked as { ageMs: number }).ageMs).toBeGreaterThanOrEqual(0);
    const text = await cotal("deliver", "pending", "bob");
    expect(text.stdout).toMatch(new RegExp(`oldest unacked: +seq ${sent.seq}, stored \\d+s ago`));
  });

  it("history --json lists the channel's posts; --limit keeps the newest", async () => {
    expectOk(await cotal("send", "msg", "general", "second post", "--as", "alice"));
    const all = await cotal("history", "general", "--json");
    expectOk(all);
    expect(all.json<Array<{ text: string; from: string }>>().map((h) => h.text)).toEqual(["hello channel", "second post"]);
    const last = (await cotal("history", "general", "--since", "1h", "--limit", "1", "--json")).json<Array<{ text: string }>>();
    expect(last.map((h) => h.text)).toEqual(["second post"]);
    const text = await cotal("history", "general");
    expect(text.stdout).toContain("#general alice: second post");
  });

  it("channels set changes a channel and channels list shows it with its posts", async () => {
    const set = await cotal("channels", "set", "general", "--no-replay", "--window", "2h", "--class", "live", "--description", "team talk", "--json");
    expectOk(set);
    expect(set.json()).toEqual({ name: "general", config: { replay: false, windowSeconds: 7200, class: "live", description: "team talk" } });
    const list = (await cotal("channels", "list", "--json")).json<{
      defaults: { class: string };
      channels: Array<{ name: string; posts: number; config: { class: string } }>;
    }>();
    expect(list.defaults.class).toBe("durable");
    expect(list.channels).toEqual([expect.objectContaining({ name: "general", posts: 2, config: expect.objectContaining({ class: "live" }) })]);
    const defaults = await cotal("channels", "defaults", "--window", "1h", "--json");
    expectOk(defaults);
    expect(defaults.json()).toMatchObject({ windowSeconds: 3600, class: "durable" });
    const nothing = await cotal("channels", "set", "general");
    expect(nothing.code).toBe(2);
    expect(nothing.stderr).toContain("Nothing to set");
  });

  it("status shows stored message counts", async () => {
    const s = (await cotal("status", "--json")).json<{ streams: Array<{ name: string; messages: number }> }>();
    // DM_ is a work queue: the two DMs bob's listener acked are gone; carol's and bob's waiting one stay.
    expect(Object.fromEntries(s.streams.map((x) => [x.name, x.messages]))).toMatchObject({ CHAT_default: 2, DM_default: 2 });
  });

  it("bad input exits 2 and says what was wrong", async () => {
    const dm = await cotal("send", "dm", "a.b", "hi");
    expect(dm.code).toBe(2);
    expect(dm.stderr).toContain(`"a.b"`);
    expect(dm.stderr).toContain("letters, digits and '_'");
    const as = await cotal("send", "msg", "general", "hi", "--as", "bad name");
    expect(as.code).toBe(2);
    expect(as.stderr).toContain("--as");
    const since = await cotal("history", "general", "--since", "yesterday");
    expect(since.code).toBe(2);
    expect(since.stderr).toContain("--since");
    const mention = await cotal("send", "msg", "general", "hi", "--as", "alice", "--mention", "nobody");
    expect(mention.code).toBe(2);
    expect(mention.stderr).toContain("Unknown mention: nobody; nothing was sent");
    const unknown = await cotal("status", "--bogus");
    expect(unknown.code).toBe(2);
  });

  it("down stops the mesh service and nats-server and removes the pid files", async () => {
    const nats = pidOf(project, "nats-server").pid;
    const svc = pidOf(project, "mesh-service").pid;
    const r = await cotal("down", "--json");
    expectOk(r);
    expect(r.json()).toMatchObject({ meshService: { pid: svc, result: "stopped" }, natsServer: { pid: nats, result: "stopped" } });
    expect(pidAlive(nats)).toBe(false);
    expect(pidAlive(svc)).toBe(false);
    expect(existsSync(join(project, ".cotal", "run", "nats-server.json"))).toBe(false);
    const status = await cotal("status");
    expect(status.code).toBe(3);
    expect(status.stdout).toContain("NOT reachable");
    const again = await cotal("down");
    expectOk(again);
    expect(again.stdout).toContain("nats-server: was not running");
  });
});

describe("without a running mesh", () => {
  it("commands outside any mesh exit 3 and say how to start one", async () => {
    const r = await runCotal(["roster"], { cwd: await newProject() });
    expect(r.code).toBe(3);
    expect(r.stderr).toContain("No mesh found");
    expect(r.stderr).toContain("cotal up");
  });

  it("up with an explicit port that is taken fails and names the port", async () => {
    const port = await freePort();
    const blocker: Server = createServer();
    await new Promise<void>((r) => blocker.listen(port, "127.0.0.1", r));
    try {
      const r = await runCotal(["up", "--open", "--detach", "--port", String(port)], { cwd: await newProject() });
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`Port ${port} on 127.0.0.1 is already in use`);
    } finally {
      await new Promise((r) => blocker.close(r));
    }
  });

  it("a missing nats-server binary is a clear error naming the install command", async () => {
    const r = await runCotal(["up", "--open", "--detach", "--port", String(await freePort())], {
      cwd: await newProject(),
      env: cleanEnv({ NATS_SERVER_BIN: "/nonexistent/nats-server" }),
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("apt-get install nats-server");
    expect(r.stderr).toContain("NATS_SERVER_BIN");
  });

  it("up refuses a nats-server older than 2.10, saying why and how to get a newer one, and starts nothing", async () => {
    const cwd = await newProject();
    // A stand-in that reports 2.9.10 as Debian 12's does; it would only print if it were run as a server.
    const oldBin = join(cwd, "old-bin");
    const old = join(oldBin, "nats-server");
    mkdirSync(oldBin);
    writeFileSync(old, '#!/bin/sh\necho "nats-server: v2.9.10"\n', { mode: 0o755 });
    // Named by NATS_SERVER_BIN: an explicit choice is refused, never replaced by a fetched one
    // (found only on PATH, up fetches a newer one instead: test/cli/mesh-host/nats-fetch.e2e.test.ts).
    const envs: Record<string, string>[] = [{ NATS_SERVER_BIN: old }];
    for (const env of envs) {
      const r = await runCotal(["up", "--detach", "--port", String(await freePort())], { cwd, env: cleanEnv(env) });
      expect(r.code, r.stderr).not.toBe(0);
      expect(r.stderr).toMatch(/nats-server 2\.10 or newer is required; found only .*v2\.9\.10/);
      expect(r.stderr).toMatch(/crashed by one message from any credential/);
      expect(r.stderr).toMatch(/power cut/);
      expect(r.stderr).toMatch(/install-nats-server\.sh.*brew install nats-server.*NATS_SERVER_BIN/s);
      expect(existsSync(join(cwd, ".cotal", "run", "nats-server.json"))).toBe(false);
    }
  });

  it("up renders a server that fsyncs before every acknowledgement, and --sync chooses otherwise (status shows it)", async () => {
    const cwd = await newProject();
    const port = String(await freePort());
    try {
      expectOk(await runCotal(["up", "--open", "--detach", "--port", port], { cwd }));
      expect(readFileSync(join(cwd, ".cotal", "nats-server.conf"), "utf8")).toMatch(/jetstream \{[^}]*sync_interval: always/);
      const json = await runCotal(["status", "--json"], { cwd });
      expectOk(json);
      const st = JSON.parse(json.stdout) as { sync: string; serverVersion: string };
      expect(st.sync).toBe("always");
      expect(st.serverVersion).toMatch(/^2\.(1\d|[2-9]\d)\./);
      const refused = await runCotal(["up", "--open", "--detach", "--sync", "2m"], { cwd });
      expect(refused.code).toBe(2);
      expect(refused.stderr).toMatch(/--sync 2m \(it syncs always/);
      expectOk(await runCotal(["down"], { cwd }));
      // --claude-auth names the host manager's Claude auth; up says it (by name, never the key).
      const up2m = await runCotal(["up", "--open", "--detach", "--port", port, "--sync", "2m", "--claude-auth", "api-key"], {
        cwd,
        env: cleanEnv({ ANTHROPIC_API_KEY: "sk-cotal-test-secret" }),
      });
      expectOk(up2m);
      expect(up2m.stdout).toMatch(/Claude auth: +api-key/);
      expect(up2m.stdout + up2m.stderr).not.toContain("sk-cotal-test-secret");
      expect(readFileSync(join(cwd, ".cotal", "nats-server.conf"), "utf8")).toMatch(/sync_interval: "2m"/);
      const text = await runCotal(["status"], { cwd });
      expectOk(text);
      expect(text.stdout).toMatch(/durability: +sync every 2m \(acknowledged writes of the last 2m can be lost/);
      const bad = await runCotal(["up", "--open", "--detach", "--sync", "sometimes"], { cwd });
      expect(bad.code).toBe(2);
      expect(bad.stderr).toMatch(/--sync must be `always`/);
      const badAuth = await runCotal(["up", "--open", "--detach", "--claude-auth", "nope"], { cwd });
      expect(badAuth.code).toBe(2);
      expect(badAuth.stderr).toMatch(/--claude-auth \(or COTAL_CLAUDE_AUTH\) is "nope": it must be auto, .*api-key/);
    } finally {
      await runCotal(["down"], { cwd });
    }
  }, 240_000); // two meshes up and down, and five refusals: each `up` takes seconds on a loaded machine

  it("foreground up (static auth by default) stops both processes on Ctrl-C", async () => {
    const project = await newProject();
    const port = await freePort();
    const up = CotalProcess.spawn(["up", "--port", String(port)], { cwd: project });
    try {
      await until(() => up.lines.some((l) => l.startsWith("mesh service:")) || up.child.exitCode !== null, 90_000, `foreground up to report\n${up.stderr}`);
      expect(up.lines.join("\n")).toMatch(/static/);
      await until(() => up.stderr.includes("Attached"), 5_000, "up to say it is attached");
      const nats = pidOf(project, "nats-server").pid;
      const svc = pidOf(project, "mesh-service").pid;
      expectOk(await runCotal(["status"], { cwd: project }));
      const exit = await up.stop("SIGINT", 60_000);
      expect(exit.code).toBe(0);
      expect(up.stderr).toContain("Mesh stopped.");
      expect(pidAlive(nats)).toBe(false);
      expect(pidAlive(svc)).toBe(false);
    } finally {
      if (up.child.exitCode === null) await up.stop("SIGKILL").catch(() => undefined);
    }
  }, 240_000);
});

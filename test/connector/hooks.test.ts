// Hook receipts, the control endpoint, custody, presence from hooks and wake notifications:
// the real hook relay (in-process) against an in-process connector on a real nats-server.
import { spawn } from "node:child_process";
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import net from "node:net";
import { describe, expect, it } from "vitest";
import { logger } from "../../broker/index.js";
import { Connector, HookSocket, seatPaths, CustodyHeldError, runHook } from "../../connector/internal.js";
import { until } from "../harness/fixtures.js";
import { TestMesh } from "../harness/mesh.js";
import { call, dmConsumerInfo, envLaunch, held, hook, mcpClient, seatFiles, seatToken, startConnector, tempControlDir, serverPerFile } from "./helpers.js";

const { server: nats, cleanups } = serverPerFile();
let n = 0;

async function meshOnly(opts: Parameters<typeof TestMesh.start>[2] = {}) {
  const mesh = await TestMesh.start(nats(), `hooks${++n}`, opts);
  cleanups.push(() => mesh.close());
  return mesh;
}

async function seat(mesh: TestMesh, name = "bob", opts: Parameters<typeof startConnector>[2] = {}) {
  const s = await startConnector(mesh, name, opts);
  cleanups.push(s.close);
  return s;
}

/** Send one raw request line over the control socket and read the first reply line. */
function rawRequest(socket: string, frame: unknown): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const c = net.connect(socket, () => c.write(JSON.stringify(frame) + "\n"));
    let buf = "";
    c.setEncoding("utf8");
    c.on("data", (s: string) => {
      buf += s;
      const nl = buf.indexOf("\n");
      if (nl >= 0) {
        c.destroy();
        resolve(JSON.parse(buf.slice(0, nl)) as Record<string, unknown>);
      }
    });
    c.on("error", reject);
  });
}

describe("hook-receipt acking", () => {
  it("a DM sent before the session starts reaches SessionStart context and is acked only after the hook wrote its reply", async () => {
    const mesh = await meshOnly();
    const alice = await mesh.joined("alice");
    await alice.dm("bob", "hello before you started");
    const { env } = await seat(mesh);
    let ackPendingWhileWriting = -1;
    const r = await hook(env, "SessionStart", { source: "startup" }, async (text) => {
      expect(text).toContain("hello before you started");
      ackPendingWhileWriting = (await dmConsumerInfo(mesh, "bob")).num_ack_pending;
    });
    expect(ackPendingWhileWriting).toBe(1);
    expect(r.raw).toBe(""); // our writer captured nothing: the check above ran instead
    await until(async () => (await dmConsumerInfo(mesh, "bob")).num_ack_pending === 0, 5_000, "the DM is acked after the hook confirmed");
    const info = await dmConsumerInfo(mesh, "bob");
    expect(info.ack_floor.stream_seq).toBe(info.delivered.stream_seq);
  });

  it("SessionStart context: identity, framed mail and a count of what still waits, within 9,000 characters, whole messages only", async () => {
    const mesh = await meshOnly();
    const alice = await mesh.joined("alice");
    for (let i = 0; i < 30; i++) await alice.dm("bob", `message ${i} ${"x".repeat(1_000)}`);
    const { env, connector } = await seat(mesh);
    const r = await hook(env, "SessionStart", { source: "startup" });
    expect(r.json).toMatchObject({ hookSpecificOutput: { hookEventName: "SessionStart" } });
    const ctx = r.context!;
    expect(ctx.length).toBeLessThanOrEqual(9_000);
    const lines = ctx.split("\n");
    expect(lines[0]).toMatch(/^You are local\.bob on the Cotal mesh \(space hooks\d+\)/);
    const shown = lines.filter((l) => l.startsWith("[cotal DM from local.alice"));
    expect(shown.length).toBeGreaterThan(3);
    // Whole messages only: every shown message has its full body line.
    for (let i = 0; i < shown.length; i++) expect(ctx).toContain(`│ message ${i} ${"x".repeat(1_000)}`);
    expect(lines.at(-1)).toBe(`${30 - shown.length} more messages waiting: call cotal_inbox to read them.`);
    await until(() => held(connector) === 30 - shown.length, 5_000, "the shown messages are cleared");
    // The next prompt carries the next batch.
    const next = await hook(env, "UserPromptSubmit", { prompt: "go on" });
    expect(next.context).toContain(`│ message ${shown.length} `);
    expect(next.context!.split("\n")[0]).toMatch(/^Cotal mesh mail for local\.bob: \d+ messages, framed by the connector\./);
  });

  it("a hook that dies before writing leaves the DM unacked; the next hook shows it flagged as a possible repeat", async () => {
    const mesh = await meshOnly();
    const alice = await mesh.joined("alice");
    await alice.dm("bob", "do not lose me");
    const { env, connector } = await seat(mesh);
    const died = await hook(env, "SessionStart", { source: "startup" }, async () => {
      throw Object.assign(new Error("write EPIPE"), { code: "EPIPE" });
    });
    expect(died.raw).toBe("");
    await until(() => connector.status().inbox.inHandover === 0, 5_000, "the hand-over is released");
    expect((await dmConsumerInfo(mesh, "bob")).num_ack_pending).toBe(1);
    const next = await hook(env, "UserPromptSubmit", { prompt: "hi" });
    expect(next.context).toMatch(/\[cotal DM from local\.alice · .* · possible repeat\]\n│ do not lose me/);
    await until(async () => (await dmConsumerInfo(mesh, "bob")).num_ack_pending === 0, 5_000, "acked after the second hook confirmed");
  });

  it("a hook whose connector answers too late prints {} within its budget, and the late batch stays unacked", async () => {
    const mesh = await meshOnly();
    const { env, connector } = await seat(mesh, "bob", { readyTimeoutMs: 3_000 });
    const alice = await mesh.joined("alice");
    await alice.dm("bob", "slow");
    await until(() => held(connector) === 1, 5_000, "the DM is in the inbox");
    // Hold the connector's answer until the hook has given up and printed its fallback.
    const original = connector.handle.bind(connector);
    let hookDone!: () => void;
    const hookGaveUp = new Promise<void>((r) => (hookDone = r));
    let lateAnswers = 0;
    connector.handle = async (req, via) => {
      await hookGaveUp;
      const answer = await original(req, via);
      lateAnswers += 1;
      return answer;
    };
    let out = "";
    await runHook("UserPromptSubmit", JSON.stringify({ hook_event_name: "UserPromptSubmit", session_id: "s" }), env, {
      budgetMs: 200,
      io: { write: async (t) => void (out += t) },
    });
    // The hook printed its empty reply without the connector's answer: it never waited for it.
    expect({ out, lateAnswers }).toEqual({ out: "{}\n", lateAnswers: 0 });
    hookDone();
    await until(() => lateAnswers === 1 && connector.status().inbox.inHandover === 0, 5_000, "the late hand-over is made, then released");
    expect((await dmConsumerInfo(mesh, "bob")).num_ack_pending).toBe(1);
    connector.handle = original;
    const next = await hook(env, "UserPromptSubmit", { prompt: "again" });
    expect(next.context).toMatch(/\[cotal DM from local\.alice · .* · possible repeat\]\n│ slow/);
  });
});

describe("keep-alive", () => {
  it("a held DM is kept alive past the ack wait: the broker does not redeliver it under the seat", async () => {
    const mesh = await meshOnly({ ackWaitMs: 900 });
    const { connector, env } = await seat(mesh);
    // A control seat that keeps nothing alive in time: its redeliveries show the ack waits passing.
    const { connector: lax } = await seat(mesh, "carol", { keepAliveMs: 60_000 });
    const alice = await mesh.joined("alice");
    await alice.dm("bob", "hold me");
    await alice.dm("carol", "let me lapse");
    await until(() => held(connector) === 1 && held(lax) === 1, 5_000, "both DMs are held");
    await until(
      async () => (await dmConsumerInfo(mesh, "carol")).num_redelivered >= 1 && (await dmConsumerInfo(mesh, "carol")).delivered.consumer_seq >= 3,
      10_000,
      "carol's DM lapsed twice",
    );
    const info = await dmConsumerInfo(mesh, "bob");
    expect({ redelivered: info.num_redelivered, ackPending: info.num_ack_pending }).toEqual({ redelivered: 0, ackPending: 1 });
    const shown = await hook(env, "UserPromptSubmit", { prompt: "go" });
    expect(shown.context).toMatch(/\[cotal DM from local\.alice · [^\]]*\]\n│ hold me/);
    expect(shown.context).not.toContain("possible repeat");
  });
});

describe("the control endpoint", () => {
  it("a hook with no identity in its environment finds its session's connector through the pairing file", async () => {
    const mesh = await meshOnly();
    const { env, connector } = await seat(mesh);
    const bare = { COTAL_CONTROL_DIR: env.COTAL_CONTROL_DIR };
    expect((await hook(bare, "PreToolUse", { tool_name: "Glob" })).raw).toBe("{}\n");
    await until(() => connector.status().activity === "Glob", 2_000, "the paired hook reached the connector");
  });

  it("refuses a wrong token and a hook from another session; the hook then prints {}", async () => {
    const mesh = await meshOnly();
    const { env, connector } = await seat(mesh);
    const { socket } = seatFiles(env);
    const token = seatToken(env);
    const frame = { v: 1, event: "PreToolUse", payload: { hook_event_name: "PreToolUse", tool_name: "Bash" }, pids: [process.pid] };
    expect(await rawRequest(socket, { ...frame, token: "wrong" })).toEqual({ v: 1, ok: false, error: "refused" });
    const nearMiss = token.slice(0, -1) + (token.endsWith("0") ? "1" : "0");
    expect(await rawRequest(socket, { ...frame, token: nearMiss })).toMatchObject({ ok: false });
    // Right token, but a process tree that is not this connector's Claude: answered with nothing.
    expect(await rawRequest(socket, { ...frame, token, pids: [999_999_999] })).toEqual({ v: 1, ok: true, reply: {} });
    expect(connector.status().activity).toBeUndefined();
    writeFileSync(seatPaths(env.COTAL_CONTROL_DIR!, { space: mesh.space, owner: "local", actor: "bob" }).tokenFile, "not-the-token\n");
    expect((await hook(env, "PreToolUse", { tool_name: "Bash" })).raw).toBe("{}\n");
  });

  it("keeps its socket and token private (0700 directory, 0600 files)", async () => {
    const mesh = await meshOnly();
    const { env, connector } = await seat(mesh);
    const p = seatFiles(env);
    expect(statSync(env.COTAL_CONTROL_DIR!).mode & 0o777).toBe(0o700);
    expect(statSync(p.socket).mode & 0o777).toBe(0o600);
    expect(statSync(p.tokenFile).mode & 0o777).toBe(0o600);
    // The file holds the token the socket accepts.
    const frame = { v: 1, event: "PreToolUse", payload: { hook_event_name: "PreToolUse" }, pids: [process.pid] };
    expect(await rawRequest(p.socket, { ...frame, token: readFileSync(p.tokenFile, "utf8").trim() })).toMatchObject({ ok: true });
    await connector.close();
    expect(existsSync(p.socket)).toBe(false);
    expect(existsSync(p.tokenFile)).toBe(false);
  });

  it("serves non-draining hooks over loopback HTTP with the bearer token", async () => {
    const mesh = await meshOnly();
    const { connector, env } = await seat(mesh, "bob", { launch: { httpPort: 0 } });
    const url = `http://127.0.0.1:${connector.httpPort}/hook/PreToolUse`;
    const post = (auth: string) =>
      fetch(url, {
        method: "POST",
        headers: { authorization: auth, "content-type": "application/json" },
        body: JSON.stringify({ hook_event_name: "PreToolUse", tool_name: "Edit", tool_input: { file: "x" } }),
      });
    expect((await post("Bearer nope")).status).toBe(401);
    const ok = await post(`Bearer ${seatToken(env)}`);
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({});
    await until(() => connector.status().activity === "Edit", 2_000, "activity set from the http hook");
  });
});

describe("hooks around the connector's start-up", () => {
  it("a hook that arrives while the connector is still joining waits for it instead of being turned away", async () => {
    const ctl = tempControlDir();
    cleanups.push(ctl.cleanup);
    const paths = seatPaths(ctl.dir, { space: "s", owner: "local", actor: "bob" });
    const cs = await HookSocket.claim(paths, "local.bob", logger("test"));
    cleanups.push(() => cs.close());
    const answer = rawRequest(paths.socket, {
      v: 1,
      token: "t".repeat(40),
      event: "PreToolUse",
      payload: { hook_event_name: "PreToolUse" },
      pids: [process.pid],
    });
    await new Promise((r) => setTimeout(r, 300));
    cs.serve({ handle: async () => ({ reply: { served: true } }), confirm: async () => undefined, release: () => undefined }, "t".repeat(40));
    expect(await answer).toEqual({ v: 1, ok: true, reply: { served: true } });
  });

  it("only SessionStart waits for a connector that is not there yet; later hooks print {} at once", async () => {
    const ctl = tempControlDir();
    cleanups.push(ctl.cleanup);
    const env = { COTAL_CONTROL_DIR: ctl.dir, COTAL_SPACE: "s", COTAL_NAME: "bob" };
    const paths = seatPaths(ctl.dir, { space: "s", owner: "local", actor: "bob" });
    const run = (event: string, budgetMs: number) => {
      let out = "";
      const reasons: string[] = [];
      const done = runHook(event, JSON.stringify({ hook_event_name: event }), env, {
        budgetMs,
        io: { write: async (t) => void (out += t) },
        onFallback: (r) => reasons.push(r),
      });
      return done.then(() => ({ out, reasons }));
    };
    // No socket: a later hook gives up on the missing socket itself, not on its budget.
    const later = await run("UserPromptSubmit", 60_000);
    expect(later.out).toBe("{}\n");
    expect(later.reasons).toEqual([expect.stringMatching(/ENOENT/)]);
    // SessionStart keeps trying: a connector that appears meanwhile answers it.
    const start = run("SessionStart", 10_000);
    writeFileSync(paths.tokenFile, "t".repeat(40) + "\n", { mode: 0o600 });
    const cs = await HookSocket.claim(paths, "local.bob", logger("test"));
    cleanups.push(() => cs.close());
    cs.serve({ handle: async () => ({ reply: { served: true } }), confirm: async () => undefined, release: () => undefined }, "t".repeat(40));
    expect(await start).toEqual({ out: JSON.stringify({ served: true }) + "\n", reasons: [] });
  });
});

describe("custody", () => {
  it("a second connector for the same principal refuses before pulling; the first keeps its mail", async () => {
    const mesh = await meshOnly();
    const ctl = tempControlDir();
    cleanups.push(ctl.cleanup);
    const first = await seat(mesh, "bob", { controlDir: ctl.dir });
    const env = { COTAL_CONTROL_DIR: ctl.dir };
    await expect(Connector.start({ env, launch: envLaunch(mesh, "bob") })).rejects.toBeInstanceOf(CustodyHeldError);
    await expect(Connector.start({ env, launch: envLaunch(mesh, "bob") })).rejects.toThrow(/Another connector on this host already holds local\.bob/);
    const alice = await mesh.joined("alice");
    await alice.dm("bob", "still yours");
    await until(() => held(first.connector) === 1, 5_000, "the first connector still gets bob's DMs");
    // Another principal in the same directory is independent.
    await seat(mesh, "carol", { controlDir: ctl.dir });
  });

  it("takes over the socket of a connector that died without cleaning up", async () => {
    const mesh = await meshOnly();
    const ctl = tempControlDir();
    cleanups.push(ctl.cleanup);
    const socket = seatPaths(ctl.dir, { space: mesh.space, owner: "local", actor: "bob" }).socket;
    const child = spawn(process.execPath, ["-e", `require("net").createServer().listen(${JSON.stringify(socket)}, () => console.log("up"))`], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    await new Promise<void>((r) => child.stdout!.once("data", () => r()));
    child.kill("SIGKILL");
    await new Promise((r) => child.once("exit", r));
    expect(existsSync(socket)).toBe(true); // a stale socket: nobody answers
    const s = await seat(mesh, "bob", { controlDir: ctl.dir });
    expect((await hook(s.env, "PreToolUse", { tool_name: "Grep" })).raw).toBe("{}\n");
    await until(() => s.connector.status().activity === "Grep", 2_000, "the new connector answers hooks");
  });

  it("of two connectors racing for a stale socket, exactly one wins", async () => {
    const mesh = await meshOnly();
    const ctl = tempControlDir();
    cleanups.push(ctl.cleanup);
    const env = { COTAL_CONTROL_DIR: ctl.dir };
    const results = await Promise.allSettled([0, 1, 2].map(() => Connector.start({ env, launch: envLaunch(mesh, "bob") })));
    const won = results.filter((r): r is PromiseFulfilledResult<Connector> => r.status === "fulfilled");
    for (const w of won) cleanups.push(() => w.value.close());
    expect(won).toHaveLength(1);
    expect(results.filter((r) => r.status === "rejected").every((r) => (r as PromiseRejectedResult).reason instanceof CustodyHeldError)).toBe(true);
  });
});

describe("presence from hooks", () => {
  it("walks idle → working (activity = tool name) → idle, waiting on a permission prompt, a failure's condition, offline at SessionEnd", async () => {
    const mesh = await meshOnly();
    const { env } = await seat(mesh);
    const alice = await mesh.joined("alice");
    const roster = await alice.roster();
    const seen: string[] = [];
    roster.onChange(() => {
      const p = roster.get("local.bob")?.presence;
      if (!p) return;
      const s = [p.status, p.activity ?? "", p.condition?.code ?? ""].join("/");
      if (seen.at(-1) !== s) seen.push(s);
    });
    const step = async (event: string, payload: Record<string, unknown>, want: string) => {
      await hook(env, event, payload);
      await until(() => seen.at(-1) === want, 5_000, `bob's presence after ${event} is ${want}; saw ${seen.join(" → ")}`);
    };
    await step("SessionStart", { source: "startup" }, "idle//");
    await step("UserPromptSubmit", { prompt: "do it" }, "working//");
    await step("PreToolUse", { tool_name: "Bash", tool_input: { command: "secret args" } }, "working/Bash/");
    await step("PreToolUse", { tool_name: "Read", agent_id: "sub-1" }, "working/Bash/"); // a subagent's call changes nothing
    await step("Notification", { notification_type: "permission_prompt", message: "Claude needs your permission" }, "waiting/Bash/approval");
    await step("Stop", { stop_hook_active: false }, "idle//");
    await step("UserPromptSubmit", { prompt: "again" }, "working//");
    await step("StopFailure", { error: "rate_limit" }, "idle//rate_limit");
    await step("SessionEnd", { reason: "other" }, "offline//rate_limit");
    expect(JSON.stringify(roster.get("local.bob")?.presence)).not.toContain("secret args");
  });
});

describe("wake", () => {
  it("pushes notifications/claude/channel for directed mail, batches ambient chatter into one wake at idle, honours attention, resets it at SessionStart", async () => {
    const mesh = await meshOnly();
    const { env, connector } = await seat(mesh, "bob", { launch: { channels: ["general", "quiet"] } });
    const { client, notifications } = await mcpClient(connector);
    cleanups.push(() => client.close());
    const wakes = () =>
      notifications.filter((x) => x.method === "notifications/claude/channel").map((x) => x.params as { content: string; meta: Record<string, string> });
    const alice = await mesh.joined("alice");

    await alice.dm("bob", "ping");
    await until(() => wakes().length === 1, 5_000, "a directed wake");
    expect(wakes()[0]).toEqual({
      content: "New mail for local.bob on the Cotal mesh: 1 directed message waiting (DM from local.alice). Call cotal_inbox to read it.",
      meta: { kind: "directed", count: "1" },
    });
    expect(wakes()[0]!.content).not.toContain("ping"); // a wake rings; it never carries the mail

    // A turn runs; chatter arrives: nothing rings until the session goes idle, then one wake.
    await hook(env, "UserPromptSubmit", { prompt: "work" });
    await call(client, "cotal_channel_mode", { channel: "quiet", mode: "quiet" });
    for (let i = 0; i < 3; i++) await alice.send("general", `chatter ${i}`);
    await alice.send("quiet", "shh");
    await until(() => held(connector) === 4, 5_000, "the posts reach the inbox");
    expect(wakes()).toHaveLength(1);
    await hook(env, "Stop", {});
    await until(() => wakes().length === 2, 5_000, "one ambient wake at idle");
    expect(wakes()[1]).toEqual({
      content: "3 new channel posts on #general wait on the Cotal mesh for local.bob. Call cotal_inbox to read them (they also come with your next prompt).",
      meta: { kind: "ambient", count: "3" },
    });

    // dnd: nothing rings; SessionStart resets attention to open (and the DM wakes again at idle).
    await call(client, "cotal_inbox");
    await call(client, "cotal_status", { attention: "dnd" });
    await alice.dm("bob", "are you there");
    await until(() => connector.status().inbox.directed === 1, 5_000, "the DM is in the inbox");
    await hook(env, "Stop", {});
    expect(wakes()).toHaveLength(2);
    const start = await hook(env, "SessionStart", { source: "clear" });
    expect(start.context).toContain("│ are you there");
    expect(connector.status()).toMatchObject({ attention: "open", channelModes: {} });
    await alice.dm("bob", "now?");
    await until(() => wakes().length === 3, 5_000, "attention is open again after SessionStart");
  });
});

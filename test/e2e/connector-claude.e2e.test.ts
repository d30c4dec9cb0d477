// The connector with the real Claude Code CLI, offline against the model double, on a real
// nats-server: hook receipts, fault handling, tools, presence, custody and stdin-close leave.
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { build } from "esbuild";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { Delivery, Endpoint } from "../../broker/index.js";
import { renderHooksSettings, type HookEvent } from "../../connector/internal.js";
import { messageText } from "../../schemas/index.js";
import { CONNECTOR_BUNDLE, ensureBuilt, HOOK_BUNDLE } from "../connector/built.js";
import { dmConsumerInfo } from "../connector/helpers.js";
import {
  claudeBin,
  claudeEnv,
  cleanupRun,
  nodeCommand,
  projectRoot,
  spawnClaude,
  writeMcpConfig,
  writeSettingsFile,
  type ClaudeProcess,
  type ClaudeRunResult,
} from "../harness/claude-runner.js";
import { NatsServer, until } from "../harness/fixtures.js";
import { TestMesh } from "../harness/mesh.js";
import { allText, ModelDouble, toolResults, type ScriptStep } from "../../testbed/model-double.js";
import { collect as collectDeliveries } from "../harness/deliveries.js";
import { freePort } from "../../testbed/ports.js";

let server: NatsServer;
let faultHook: string;
let root: string;
const cleanups: Array<() => unknown> = [];

beforeAll(async () => {
  ensureBuilt();
  root = await mkdtemp(path.join(os.tmpdir(), "cotal-e2e-conn-"));
  faultHook = path.join(root, "connector-hook-fault.mjs");
  await build({
    entryPoints: [path.join(projectRoot, "test", "fixtures", "connector-hook-fault.ts")],
    outfile: faultHook,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    logLevel: "warning",
  });
  server = await NatsServer.start();
}, 60_000);
afterAll(async () => {
  await server?.cleanup();
  if (root) await rm(root, { recursive: true, force: true });
});
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await Promise.resolve(c()).catch(() => undefined);
});

let n = 0;

interface Seat {
  mesh: TestMesh;
  dir: string;
  env: Record<string, string>;
  args: string[];
  logFile: string;
}

/**
 * A mesh and the files a session of `bob` needs: hooks from the registry (real dist/hook.mjs,
 * unless `hookCommand` overrides an event), the connector bundle as MCP server "cotal".
 */
async function seatFor(opts: { hookCommand?: Partial<Record<HookEvent, string>>; env?: Record<string, string>; ackWaitMs?: number } = {}): Promise<Seat> {
  const mesh = await TestMesh.start(server, `e2e${++n}`, opts.ackWaitMs ? { ackWaitMs: opts.ackWaitMs } : {});
  cleanups.push(() => mesh.close());
  const dir = path.join(root, `seat${n}`);
  const ctl = path.join(dir, "ctl");
  mkdirSync(ctl, { recursive: true, mode: 0o700 });
  const logFile = path.join(dir, "connector.log");
  const settings = await writeSettingsFile(dir, {
    hooks: renderHooksSettings({ command: (e) => opts.hookCommand?.[e] ?? nodeCommand(HOOK_BUNDLE, e) }),
  });
  const mcp = await writeMcpConfig(dir, { cotal: { type: "stdio", command: process.execPath, args: [CONNECTOR_BUNDLE] } });
  const env = {
    COTAL_SERVER: server.url,
    COTAL_SPACE: mesh.space,
    COTAL_NAME: "bob",
    COTAL_CONTROL_DIR: ctl,
    COTAL_LOG_FILE: logFile,
    COTAL_LOG_LEVEL: "debug",
    ...opts.env,
  };
  const args = ["--mcp-config", mcp, "--strict-mcp-config", "--settings", settings, "--permission-mode", "dontAsk", "--allowedTools", "mcp__cotal__*"];
  return { mesh, dir, env, args, logFile };
}

function connectorLog(seat: Seat): Array<Record<string, unknown>> {
  if (!existsSync(seat.logFile)) return [];
  return readFileSync(seat.logFile, "utf8")
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

async function start(seat: Seat, double: ModelDouble, prompt: string): Promise<ClaudeProcess> {
  const proc = await spawnClaude({ baseUrl: double.url, prompt, args: seat.args, env: seat.env, timeoutMs: 60_000 });
  cleanups.push(async () => {
    proc.kill("SIGKILL");
    await proc.done;
    await cleanupRun(proc);
  });
  return proc;
}

function expectClean(run: ClaudeRunResult, seat: Seat): void {
  expect(run.timedOut, run.stderr).toBe(false);
  expect(run.code, `stderr: ${run.stderr}\nstdout: ${run.stdout}\nconnector log: ${JSON.stringify(connectorLog(seat).slice(-20), null, 1)}`).toBe(0);
}

/** Everything an endpoint receives, acked as it arrives. */
const collect = (ep: Endpoint): Delivery[] => collectDeliveries(ep).items;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe("the connector with the real claude CLI", () => {
  it("a DM sent before the session starts reaches the model via SessionStart context, and is acked only after that hook returned", async () => {
    const gate = path.join(root, `gate${n + 1}`);
    mkdirSync(gate);
    const seat = await seatFor({ hookCommand: { SessionStart: nodeCommand(faultHook, "gated", gate, "SessionStart") } });
    const alice = await seat.mesh.joined("alice");
    const sent = await alice.dm("bob", "Early bird: the deploy is at 3pm.");
    const double = await ModelDouble.start([{ reply: ["Noted."] }]);
    cleanups.push(() => double.close());
    const proc = await start(seat, double, "Anything new?");

    await until(() => existsSync(path.join(gate, "SessionStart.received")), 30_000, "the SessionStart hook received the connector's reply");
    const reply = JSON.parse(readFileSync(path.join(gate, "SessionStart.received"), "utf8")) as { hookSpecificOutput: { additionalContext: string } };
    expect(reply.hookSpecificOutput.additionalContext).toContain("│ Early bird: the deploy is at 3pm.");
    // The hook has the reply but has not written it: the DM is delivered, not acked.
    const held = await dmConsumerInfo(seat.mesh, "bob");
    expect(held.num_ack_pending).toBe(1);
    expect(held.ack_floor.stream_seq).toBeLessThan(sent.seq);
    expect(double.mainRequests).toHaveLength(0);

    writeFileSync(path.join(gate, "SessionStart.go"), "");
    const run = await proc.done;
    expectClean(run, seat);
    expect(allText(double.mainRequests[0]!)).toMatch(/\[cotal DM from local\.alice · [^\]]* · id [\w-]+\]\n│ Early bird: the deploy is at 3pm\./);
    await until(async () => (await dmConsumerInfo(seat.mesh, "bob")).ack_floor.stream_seq >= sent.seq, 5_000, "the DM is acked after the hook wrote its reply");
    expect((await dmConsumerInfo(seat.mesh, "bob")).num_ack_pending).toBe(0);
  }, 90_000);

  it("a hook killed before writing leaves the DM unacked; it appears in the next hook's context flagged as a possible repeat", async () => {
    const gate = path.join(root, `gate${n + 1}`);
    mkdirSync(gate);
    const seat = await seatFor({
      hookCommand: {
        SessionStart: nodeCommand(faultHook, "die", gate, "SessionStart"),
        UserPromptSubmit: nodeCommand(faultHook, "gated", gate, "UserPromptSubmit"),
      },
    });
    const alice = await seat.mesh.joined("alice");
    const sent = await alice.dm("bob", "Do not drop me.");
    const double = await ModelDouble.start([{ reply: ["Got it."] }]);
    cleanups.push(() => double.close());
    const proc = await start(seat, double, "Check your mail.");

    await until(() => existsSync(path.join(gate, "UserPromptSubmit.received")), 30_000, "the UserPromptSubmit hook received its reply");
    expect(readFileSync(path.join(gate, "SessionStart.received"), "utf8")).toContain("Do not drop me.");
    // The SessionStart hook died with the DM in hand: still unacked.
    const held = await dmConsumerInfo(seat.mesh, "bob");
    expect(held.num_ack_pending).toBe(1);
    expect(held.ack_floor.stream_seq).toBeLessThan(sent.seq);
    const again = readFileSync(path.join(gate, "UserPromptSubmit.received"), "utf8");
    expect(again).toMatch(/\[cotal DM from local\.alice · [^\]]* · possible repeat\]\\n│ Do not drop me\./);

    writeFileSync(path.join(gate, "UserPromptSubmit.go"), "");
    const run = await proc.done;
    expectClean(run, seat);
    expect(allText(double.mainRequests[0]!)).toMatch(/possible repeat\]\n│ Do not drop me\./);
    await until(async () => (await dmConsumerInfo(seat.mesh, "bob")).ack_floor.stream_seq >= sent.seq, 5_000, "acked after the second hook wrote its reply");
    expect(connectorLog(seat).some((l) => l.msg === "hand-over not confirmed; its mail stays, flagged as a possible repeat")).toBe(true);
  }, 90_000);

  it("the model's cotal_send and cotal_dm reach the mesh as the seat with honest receipts, and presence walks idle → working → idle", async () => {
    const seat = await seatFor();
    const alice = await seat.mesh.joined("alice");
    const carol = await seat.mesh.joined("carol");
    await carol.joinChannel("general");
    const dms = collect(alice);
    const posts = collect(carol);
    const roster = await alice.roster();
    const walk: string[] = [];
    roster.onChange(() => {
      const p = roster.get("local.bob")?.presence;
      if (!p) return;
      const s = `${p.status}${p.activity ? `:${p.activity}` : ""}`;
      if (walk.at(-1) !== s) walk.push(s);
    });
    const script: ScriptStep[] = [
      { reply: ["Posting.", { tool: "mcp__cotal__cotal_send", input: { channel: "general", text: "Build 42 is green." } }] },
      { afterToolResult: "mcp__cotal__cotal_send", reply: [{ tool: "mcp__cotal__cotal_dm", input: { to: "alice", text: "Can you deploy 42?" } }] },
      { afterToolResult: "mcp__cotal__cotal_dm", reply: ["Done: posted and asked alice."] },
    ];
    const double = await ModelDouble.start(script);
    cleanups.push(() => double.close());
    const proc = await start(seat, double, "Announce the build and ask alice to deploy.");
    const run = await proc.done;
    expectClean(run, seat);
    expect(run.json).toMatchObject({ is_error: false, result: "Done: posted and asked alice.", num_turns: 3 });

    await until(() => posts.length === 1 && dms.length === 1, 5_000, "carol gets the post and alice the DM");
    expect(posts[0]).toMatchObject({ kind: "channel", channel: "general", from: { owner: "local", actor: "bob" } });
    expect(messageText(posts[0]!.message)).toBe("Build 42 is green.");
    expect(dms[0]).toMatchObject({ kind: "dm", from: { owner: "local", actor: "bob" } });
    expect(messageText(dms[0]!.message)).toBe("Can you deploy 42?");

    const results = toolResults(double.mainRequests[2]!);
    expect(results.map((r) => [r.name, r.isError])).toEqual([
      ["mcp__cotal__cotal_send", false],
      ["mcp__cotal__cotal_dm", false],
    ]);
    // Claude Code hands the model a tool's structured content (as JSON) in place of its text
    // content: the receipt as data, with the sentence in its `text`.
    const [sent, dm] = results.map((r) => JSON.parse(r.text) as { target: unknown; text: string });
    // carol joined #general, alice did not: the receipt counts the channel's members, not every endpoint online.
    expect(sent!.target).toEqual({ kind: "channel", channel: "general", onlineMembers: 1 });
    expect(sent!.text).toMatch(/^Posted on #general as local\.bob \(id [\w-]+\): stored seq \d+ on general; 1 other member of #general online at send\.$/);
    expect(dm!.target).toEqual({ kind: "dm", to: "local.alice", recipient: "idle" });
    expect(dm!.text).toMatch(/^DM to local\.alice from local\.bob \(id [\w-]+\): stored seq \d+; recipient idle at send\.$/);
    for (const r of results) expect(r.text).not.toMatch(/deliver|read by/);

    // Through the real turn: idle, working (tool name as activity), idle, then offline when claude exits.
    await until(() => walk.at(-1) === "offline", 5_000, `bob goes offline after the session; saw ${walk.join(" → ")}`);
    const compact = walk.filter((s, i) => s !== walk[i - 1]);
    expect(compact[0]).toBe("idle");
    expect(compact).toContain("working");
    expect(compact).toContain("working:mcp__cotal__cotal_send");
    expect(compact).toContain("working:mcp__cotal__cotal_dm");
    const lastWorking = compact.lastIndexOf("working:mcp__cotal__cotal_dm");
    expect(compact.slice(lastWorking + 1)).toEqual(["idle", "offline"]);
    expect(JSON.stringify(roster.get("local.bob")?.presence)).not.toContain("deploy 42");
  }, 90_000);

  it("from launch material, with PreToolUse and Stop as http hooks: presence still follows the turn", async () => {
    const seat = await seatFor();
    const port = await freePort();
    const token = "h".repeat(48);
    const material = path.join(seat.dir, "launch.json");
    writeFileSync(
      material,
      JSON.stringify({ server: server.url, space: seat.mesh.space, name: "bob", controlToken: token, controlDir: seat.env.COTAL_CONTROL_DIR, httpPort: port }),
      { mode: 0o600 },
    );
    const settings = await writeSettingsFile(
      seat.dir,
      {
        hooks: renderHooksSettings({ command: (e) => nodeCommand(HOOK_BUNDLE, e), http: { url: `http://127.0.0.1:${port}`, tokenEnv: "COTAL_HOOK_TOKEN" } }),
      },
      "settings-http.json",
    );
    const args = seat.args.map((a) => (a.endsWith("settings.json") ? settings : a));
    const env = { COTAL_LAUNCH_MATERIAL: material, COTAL_HOOK_TOKEN: token, COTAL_LOG_FILE: seat.logFile, COTAL_LOG_LEVEL: "debug" };
    const alice = await seat.mesh.joined("alice");
    const roster = await alice.roster();
    const walk: string[] = [];
    roster.onChange(() => {
      const p = roster.get("local.bob")?.presence;
      const s = p ? `${p.status}${p.activity ? `:${p.activity}` : ""}` : "";
      if (p && walk.at(-1) !== s) walk.push(s);
    });
    const double = await ModelDouble.start([
      { reply: [{ tool: "mcp__cotal__cotal_roster", input: {} }] },
      { afterToolResult: "mcp__cotal__cotal_roster", reply: ["Two of us."] },
    ]);
    cleanups.push(() => double.close());
    const proc = await spawnClaude({ baseUrl: double.url, prompt: "Who is here?", args, env, timeoutMs: 60_000 });
    cleanups.push(async () => {
      proc.kill("SIGKILL");
      await proc.done;
      await cleanupRun(proc);
    });
    const run = await proc.done;
    expectClean(run, seat);
    expect(toolResults(double.mainRequests[1]!)[0]!.text).toMatch(/- local\.bob \(you\) · working · activity mcp__cotal__cotal_roster/);
    await until(() => walk.includes("offline"), 5_000, `bob goes offline; saw ${walk.join(" → ")}`);
    const compact = walk.filter((s, i) => s !== walk[i - 1]);
    expect(compact.slice(compact.indexOf("working:mcp__cotal__cotal_roster"))).toEqual(["working:mcp__cotal__cotal_roster", "idle", "offline"]);
    expect(connectorLog(seat).some((l) => l.msg === "refused an http hook request with a wrong token")).toBe(false);
  }, 90_000);

  it("inbox overflow keeps every DM: a flood over capacity drains to the model with none lost", async () => {
    const seat = await seatFor({ env: { COTAL_INBOX_CAPACITY: "6", COTAL_INBOX_NAK_DELAY_MS: "300", COTAL_CHANNELS: "general" } });
    // bob's durable #general membership exists before the flood (as after an earlier session).
    const before = await seat.mesh.joined("bob");
    await before.joinChannel("general");
    await before.close();
    const alice = await seat.mesh.joined("alice");
    const carol = await seat.mesh.joined("carol");
    const flood: Array<Promise<unknown>> = [];
    const dmTexts: string[] = [];
    for (let i = 0; i < 40; i++) {
      flood.push(carol.send("general", `chatter ${i}`));
      if (i % 3 === 0) {
        dmTexts.push(`urgent dm ${i}`);
        flood.push(alice.dm("bob", `urgent dm ${i}`));
      }
    }
    await Promise.all(flood);

    // The model keeps calling cotal_inbox until it is empty and nothing is held by the broker.
    const drained = (text: string) => text.startsWith("Your inbox is empty.") && !text.includes("held by the broker");
    const again: ScriptStep = {
      afterToolResult: "mcp__cotal__cotal_inbox",
      reply: (req) => {
        const last = toolResults(req).at(-1)!;
        return drained(last.text) ? ["Inbox drained."] : [{ tool: "mcp__cotal__cotal_inbox", input: {} }];
      },
    };
    const double = await ModelDouble.start([{ reply: [{ tool: "mcp__cotal__cotal_inbox", input: {} }] }, ...Array.from({ length: 80 }, () => again)]);
    cleanups.push(() => double.close());
    const proc = await start(seat, double, "Read all your mail.");
    const run = await proc.done;
    expectClean(run, seat);
    expect(run.json?.result).toBe("Inbox drained.");

    const seenByModel = allText(double.mainRequests.at(-1)!);
    const shown = [...seenByModel.matchAll(/^│ (urgent dm \d+)$/gm)].map((m) => m[1]!);
    expect(
      dmTexts.filter((t) => !shown.includes(t)),
      "DMs the model never saw",
    ).toEqual([]);
    expect(shown.sort(), "each DM handed over exactly once").toEqual([...dmTexts].sort());
    expect(connectorLog(seat).some((l) => l.msg === "inbox over capacity")).toBe(true);
    await until(async () => (await dmConsumerInfo(seat.mesh, "bob")).ack_floor.stream_seq === dmTexts.length, 5_000, "every DM acked");
    expect((await dmConsumerInfo(seat.mesh, "bob")).num_pending).toBe(0);
  }, 90_000);

  it("a second connector for the same principal refuses; killing claude takes the seat offline at once", async () => {
    const seat = await seatFor();
    const alice = await seat.mesh.joined("alice");
    const roster = await alice.roster();
    // The model never answers in time: claude sits mid-turn until we kill it.
    const double = await ModelDouble.start([{ delayMs: 60_000, reply: ["too late"] }]);
    cleanups.push(() => double.close());
    const proc = await spawnPlain(seat, double, "Wait.");
    await until(() => roster.get("local.bob")?.status === "working", 30_000, "bob is working on the prompt");
    const connectorPid = Number(roster.get("local.bob")!.presence.card.meta.pid);
    expect(alive(connectorPid)).toBe(true);

    const second = spawn(process.execPath, [CONNECTOR_BUNDLE], {
      env: { PATH: process.env.PATH ?? "", ...seat.env, COTAL_LOG_FILE: "" },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let secondErr = "";
    second.stderr.setEncoding("utf8").on("data", (s: string) => (secondErr += s));
    const secondExit = await new Promise<number | null>((r) => second.once("exit", (c) => r(c)));
    expect(secondExit).toBe(3);
    expect(secondErr).toContain("Another connector on this host already holds local.bob");

    const killedAt = Date.now();
    process.kill(proc.pid, "SIGKILL"); // claude only: its connector sees stdin close
    await until(() => roster.get("local.bob")?.presence.status === "offline", 5_000, "bob's seat goes offline when claude dies");
    expect(Date.now() - killedAt).toBeLessThan(5_000); // well before the 6 s liveness window would say so
    await until(() => !alive(connectorPid), 5_000, "the connector exits after leaving");
    expect(
      connectorLog(seat)
        .filter((l) => l.msg === "leaving the mesh")
        .map((l) => l.reason),
    ).toEqual(["stdin closed"]);
  }, 90_000);
});

/** Start claude without the harness's group kill on exit (so its connector may leave on its own). */
async function spawnPlain(seat: Seat, double: ModelDouble, prompt: string): Promise<{ pid: number }> {
  const home = path.join(seat.dir, "home");
  const cwd = path.join(seat.dir, "work");
  mkdirSync(home, { recursive: true });
  mkdirSync(cwd, { recursive: true });
  const child = spawn(claudeBin(), ["-p", "--output-format", "json", ...seat.args], {
    cwd,
    env: claudeEnv({ baseUrl: double.url, home, env: seat.env }),
    stdio: ["pipe", "ignore", "ignore"],
    detached: true,
  });
  child.stdin.on("error", () => undefined);
  child.stdin.end(prompt);
  const pid = child.pid!;
  cleanups.push(() => {
    try {
      process.kill(-pid, "SIGKILL");
    } catch {
      // group already gone
    }
  });
  return { pid };
}

/** A loopback port nobody listens on right now. */

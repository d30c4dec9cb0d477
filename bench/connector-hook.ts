// What a seat costs per tool call and while idle, each beside the raw NATS client doing the same
// in the same run (`node dist/bench-connector.mjs`). A private nats-server (never the shared
// one), the mesh service in-process, and the connector bundle as a child joined from launch
// material the way Claude runs it: it joins on its session's first hook (SessionStart).
//   command hook: spawn `node dist/hook.mjs PreToolUse` with a real payload on stdin, until it
//     exits (what Claude pays per tool call); raw: spawn `node dist/bench-raw-hook.mjs PreToolUse`,
//     which connects with the raw client, requests the same payload from a raw-client seat
//     process and prints its `{}` (bench/raw-hook.ts);
//   node floor: spawn `node -e ""` (the part of both that is Node starting up);
//   relay: the same hook code run in-process (socket round trip to the connector, no process
//     start); relay, a new tool: the same, the tool alternating between two names, so every call
//     changes the seat's presence (the others call one tool: after the first, nothing to write); http: POST /hook/PreToolUse with the bearer token; raw for both: the same request
//     from this process to the raw seat process over NATS;
//   idle RSS: the connector joined and idle, with Node's default flags and with the plugin's;
//     raw: the raw seat process, with the same flags.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { Endpoint, MeshService } from "../broker/index.js";
import { CONNECTOR_NODE_FLAGS } from "../runtime/index.js";
import { runHook } from "../connector/index.js";
import { NatsServer } from "../testbed/nats-server.js";
import { freePort } from "../testbed/ports.js";
import { until } from "../testbed/until.js";
import type { Tally } from "./checks.js";
import { CpuAccount, type CpuPerMessage } from "./cpu.js";
import { fmt, type BenchReport, type BenchRun, type Row } from "./report.js";
import { summarize, type Summary } from "./stats.js";

export interface ConnectorPlan {
  /** Unmeasured calls of each kind first. */
  warmup: number;
  /** Process-spawning hooks per side (and `node -e ""` starts). */
  command: number;
  /** In-process round trips per side: relay, http, raw request. */
  inProcess: number;
  /** How long the seats sit idle before their RSS is read, ms. */
  idleMs: number;
}

export const CONNECTOR_PLANS: Record<"full" | "quick" | "smoke", ConnectorPlan> = {
  full: { warmup: 20, command: 100, inProcess: 2_000, idleMs: 8_000 },
  quick: { warmup: 5, command: 20, inProcess: 200, idleMs: 3_000 },
  smoke: { warmup: 1, command: 2, inProcess: 10, idleMs: 200 },
};

/** The bundles the bench runs: the connector and hook as Claude runs them, and the raw client's stand-ins. */
export interface ConnectorBundles {
  connector: string;
  hook: string;
  rawHook: string;
}

/** The bundles in a dist/ folder. */
export function bundlesIn(dist: string): ConnectorBundles {
  return { connector: path.join(dist, "connector.mjs"), hook: path.join(dist, "hook.mjs"), rawHook: path.join(dist, "bench-raw-hook.mjs") };
}

const SPACE = "benchhook";
/** The in-process round trips of each kind come in this many blocks per side. */
const IN_PROCESS_BLOCKS = 10;
const TOKEN = "b".repeat(48);
const RAW_SUBJECT = "bench.hook.PreToolUse";
const hookPayload = (event: string, transcript: string, tool = "Bash") =>
  JSON.stringify({
    session_id: "bench-session",
    transcript_path: transcript,
    cwd: process.cwd(),
    hook_event_name: event,
    source: "startup",
    tool_name: tool,
    tool_input: { command: "ls -la", description: "list files" },
    tool_use_id: "toolu_bench",
  });

/**
 * With BENCH_PROFILE set, the seat profiles its whole life (`--cpu-prof`, written when it exits) as
 * `<folder>/seat-<name>.cpuprofile`: its start and idle time are in it, the measured calls most of it.
 */
function seatProfileFlags(name: string): string[] {
  const dir = process.env.BENCH_PROFILE;
  return dir ? ["--cpu-prof", `--cpu-prof-dir=${path.resolve(dir)}`, `--cpu-prof-name=seat-${name}.cpuprofile`, "--cpu-prof-interval=100"] : [];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const msSince = (t0: bigint) => Number(process.hrtime.bigint() - t0) / 1e6;

/** Spawn, hand `stdin`, wait for exit: its wall time and what it printed. */
function runChild(cmd: string, args: string[], stdin: string, env: NodeJS.ProcessEnv): Promise<{ ms: number; out: string }> {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const c = spawn(cmd, args, { env, stdio: ["pipe", "pipe", "ignore"] });
    let out = "";
    c.stdout.setEncoding("utf8").on("data", (s: string) => (out += s));
    c.on("error", reject);
    c.on("exit", () => resolve({ ms: msSince(t0), out }));
    c.stdin.end(stdin);
  });
}

/** Resident and peak memory of a process, MiB (Linux /proc). */
function rssMiB(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const get = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? NaN) / 1024;
  return { rss: get("VmRSS"), peak: get("VmHWM") };
}

/** Stop a child at teardown: close its stdin (the connector then leaves the mesh) or signal it, then kill what is left. */
function stopChild(child: ChildProcess, how: "stdin" | "SIGTERM"): () => Promise<void> {
  return async () => {
    const exited = new Promise<void>((r) => (child.exitCode !== null || child.signalCode !== null ? r() : child.once("exit", () => r())));
    if (how === "stdin") child.stdin?.end();
    else child.kill("SIGTERM");
    await Promise.race([exited, sleep(5_000)]);
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  };
}

interface Seat {
  pid: number;
  /** The command hook's environment for this seat. */
  env: NodeJS.ProcessEnv;
  /** Its session's transcript (empty: the event plane follows it). */
  transcript: string;
}

/**
 * Start the connector bundle for `name` from launch material (http listener on `httpPort`), then
 * start its session the way Claude does, with a SessionStart command hook: the first hook joins it.
 * Resolves once its presence is on the roster.
 */
async function startSeat(
  url: string,
  ctl: string,
  bundles: ConnectorBundles,
  td: BenchRun["td"],
  name: string,
  httpPort: number,
  nodeFlags: readonly string[],
): Promise<Seat> {
  const material = path.join(ctl, `${name}.json`);
  writeFileSync(material, JSON.stringify({ server: url, space: SPACE, name, controlToken: TOKEN, controlDir: ctl, httpPort }), { mode: 0o600 });
  const transcript = path.join(ctl, `${name}.jsonl`);
  writeFileSync(transcript, "");
  const child = spawn(process.execPath, [...nodeFlags, bundles.connector], {
    env: { PATH: process.env.PATH ?? "", COTAL_LAUNCH_MATERIAL: material, COTAL_LOG_LEVEL: "warn" },
    stdio: ["pipe", "ignore", "inherit"],
  });
  td.defer(stopChild(child, "stdin"));
  const env = { PATH: process.env.PATH ?? "", COTAL_LAUNCH_MATERIAL: material };
  const watcher = await Endpoint.connect({ server: url, space: SPACE, name: `watch_${name}` });
  try {
    const roster = await watcher.roster();
    const on = () => (roster.get(`local.${name}`)?.status ?? "offline") !== "offline";
    // A hook gives up (prints {}) when the connector is still starting past its budget: Claude would not retry, the bench does.
    await until(
      async () => on() || (await runChild(process.execPath, [bundles.hook, "SessionStart"], hookPayload("SessionStart", transcript), env), on()),
      60_000,
      `connector ${name} on the roster after its SessionStart hook`,
      100,
    );
  } finally {
    await watcher.close();
  }
  return { pid: child.pid!, env, transcript };
}

/** A raw-client seat process (bench/raw-hook.ts serve): answers `{}` on bench.hook.*; resolves once it is subscribed. */
async function startRawSeat(url: string, bundles: ConnectorBundles, td: BenchRun["td"], nodeFlags: readonly string[]): Promise<number> {
  const child = spawn(process.execPath, [...nodeFlags, bundles.rawHook, "serve"], {
    env: { PATH: process.env.PATH ?? "", BENCH_NATS_URL: url },
    stdio: ["pipe", "pipe", "inherit"],
  });
  td.defer(stopChild(child, "SIGTERM"));
  await new Promise<void>((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`the raw seat process exited (${code}) before it was ready`)));
    child.stdout!.setEncoding("utf8").once("data", () => resolve());
  });
  return child.pid!;
}

/** Counts calls and the ones answered `{}` (what the connector and the raw seat answer a PreToolUse). */
class Answers {
  sent = 0;
  answered = 0;
  note(out: string): void {
    this.sent += 1;
    if (out.trim() === "{}") this.answered += 1;
  }
  get tally(): Tally {
    return { sent: this.sent, received: this.answered, duplicates: 0, pending: 0 };
  }
}

/** Time `f` `n` times after `warmup` untimed calls; each call's answer goes to `answers`. */
async function timed(n: number, warmup: number, answers: Answers, f: () => Promise<string>): Promise<number[]> {
  for (let i = 0; i < warmup; i++) answers.note(await f());
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = process.hrtime.bigint();
    const text = await f();
    out.push(msSince(t0));
    answers.note(text);
  }
  return out;
}

export async function connectorBench(plan: ConnectorPlan & { bundles: ConnectorBundles }, { td, step }: BenchRun): Promise<BenchReport> {
  const { bundles } = plan;
  const ctl = mkdtempSync(path.join(os.tmpdir(), "cotal-bench-hook-"));
  td.defer(() => rmSync(ctl, { recursive: true, force: true }));
  const server = await NatsServer.start();
  td.defer(() => server.cleanup());
  const nc = await connect({ servers: server.url, name: "mesh-service" });
  td.defer(() => nc.close());
  const service = await MeshService.start(nc, SPACE);
  td.defer(() => service.stop());
  const port = await freePort();

  step("connector bob (Node's default flags) and a raw seat process: started, joined by their first hook");
  const bob = await startSeat(server.url, ctl, bundles, td, "bob", port, seatProfileFlags("bob"));
  const rawSeat = await startRawSeat(server.url, bundles, td, []);
  const rawEnv = { PATH: process.env.PATH ?? "", BENCH_NATS_URL: server.url };
  const payload = hookPayload("PreToolUse", bob.transcript);
  const payloads = [hookPayload("PreToolUse", bob.transcript, "Read"), payload];

  step(`command hooks: ${plan.command} per side (and as many bare Node starts), after ${plan.warmup} warm-up`);
  const answers = {
    command: new Answers(),
    rawCommand: new Answers(),
    relay: new Answers(),
    relayNewTool: new Answers(),
    http: new Answers(),
    rawRequest: new Answers(),
  };
  const floor: number[] = [];
  const command: number[] = [];
  const rawCommand: number[] = [];
  const commandHook = async () => (await runChild(process.execPath, [bundles.hook, "PreToolUse"], payload, bob.env)).out;
  const rawHook = async () => (await runChild(process.execPath, [bundles.rawHook, "PreToolUse"], payload, rawEnv)).out;
  for (let i = 0; i < plan.warmup; i++) {
    answers.command.note(await commandHook());
    answers.rawCommand.note(await rawHook());
  }
  // CPU per call: this process, the hook process it ran (reaped), the seat answering it and nats-server.
  const cpu = new CpuAccount<"command" | "rawCommand" | "relay" | "relayNewTool" | "http" | "rawRequest">(
    () => [...(server.pid ? [server.pid] : []), bob.pid, rawSeat],
    "hook",
  );
  for (let i = 0; i < plan.command; i++) {
    floor.push((await runChild(process.execPath, ["-e", ""], "", rawEnv)).ms);
    command.push(...(await cpu.measure("command", 1, () => timed(1, 0, answers.command, commandHook))));
    rawCommand.push(...(await cpu.measure("rawCommand", 1, () => timed(1, 0, answers.rawCommand, rawHook))));
  }

  step(`in-process round trips: ${plan.inProcess} each of relay, http and raw request`);
  const relay: number[] = [];
  const relayNewTool: number[] = [];
  const http: number[] = [];
  const rawRequest: number[] = [];
  const url = `http://127.0.0.1:${port}/hook/PreToolUse`;
  const client: NatsConnection = await connect({ servers: server.url, name: "bench-raw-hook-client" });
  td.defer(() => client.close());
  const relayWith = async (body: string) => {
    let out = "";
    await runHook("PreToolUse", body, bob.env, { io: { write: async (t: string) => void (out += t) } });
    return out;
  };
  const relayOnce = () => relayWith(payload);
  let calls = 0;
  const relayNewToolOnce = () => relayWith(payloads[calls++ % 2]!);
  const httpOnce = async () => {
    const r = await fetch(url, { method: "POST", headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" }, body: payload });
    const text = await r.text();
    return r.status === 200 ? text : `status ${r.status}`;
  };
  const rawOnce = async () => (await client.request(RAW_SUBJECT, payload, { timeout: 5_000 })).string();
  for (let i = 0; i < plan.warmup * 10; i++) {
    answers.relay.note(await relayOnce());
    answers.relayNewTool.note(await relayNewToolOnce());
    answers.http.note(await httpOnce());
    answers.rawRequest.note(await rawOnce());
  }
  // In blocks, the sides' order alternating: reading /proc around each sub-millisecond call would cost more than the call.
  const perBlock = Math.ceil(plan.inProcess / IN_PROCESS_BLOCKS);
  const sides = [
    { side: "relay", out: relay, answers: answers.relay, f: relayOnce },
    { side: "relayNewTool", out: relayNewTool, answers: answers.relayNewTool, f: relayNewToolOnce },
    { side: "http", out: http, answers: answers.http, f: httpOnce },
    { side: "rawRequest", out: rawRequest, answers: answers.rawRequest, f: rawOnce },
  ] as const;
  for (let b = 0; b * perBlock < plan.inProcess; b++) {
    const n = Math.min(perBlock, plan.inProcess - b * perBlock);
    for (const k of b % 2 === 0 ? sides : [...sides].reverse()) k.out.push(...(await cpu.measure(k.side, n, () => timed(n, 0, k.answers, k.f))));
  }

  step(`idle RSS: a second connector and raw seat with the plugin's flags (${CONNECTOR_NODE_FLAGS.join(" ")}), then ${plan.idleMs / 1000} s idle`);
  const carol = await startSeat(server.url, ctl, bundles, td, "carol", 0, CONNECTOR_NODE_FLAGS);
  const rawLean = await startRawSeat(server.url, bundles, td, CONNECTOR_NODE_FLAGS);
  await sleep(plan.idleMs);
  const idle = { connector: rssMiB(bob.pid), raw: rssMiB(rawSeat), connectorLean: rssMiB(carol.pid), rawLean: rssMiB(rawLean) };

  const s = {
    floor: summarize(floor),
    command: summarize(command),
    rawCommand: summarize(rawCommand),
    relay: summarize(relay),
    relayNewTool: summarize(relayNewTool),
    http: summarize(http),
    rawRequest: summarize(rawRequest),
  };
  const latencyRows = (name: string, cotal: Summary, raw: Summary, note: string, perCall: CpuPerMessage): Row[] => [
    { name: `${name} p50`, unit: "ms", cotal: cotal.p50, raw: raw.p50, better: "lower", note, cpu: perCall },
    { name: `${name} p99`, unit: "ms", cotal: cotal.p99, raw: raw.p99, better: "lower", cpu: perCall },
  ];
  const rawReq = "raw: the same payload requested from the raw seat process over NATS by this process";
  const rows: Row[] = [
    ...latencyRows(
      "PreToolUse, command hook",
      s.command,
      s.rawCommand,
      `${plan.command} each; spawn node dist/hook.mjs until it exits; raw: node dist/bench-raw-hook.mjs (connect, request, print, exit); cpu/msg: per call, the hook process, this process, the seat and nats-server`,
      cpu.pair("command", "rawCommand"),
    ),
    ...latencyRows(
      "PreToolUse, relay in-process",
      s.relay,
      s.rawRequest,
      `${plan.inProcess} each; the hook's relay over the connector's socket; ${rawReq}`,
      cpu.pair("relay", "rawRequest"),
    ),
    ...latencyRows(
      "PreToolUse, relay, a new tool each call",
      s.relayNewTool,
      s.rawRequest,
      `${plan.inProcess} each; the relay, its tool alternating between Read and Bash (every call changes the seat's presence); ${rawReq}`,
      cpu.pair("relayNewTool", "rawRequest"),
    ),
    ...latencyRows(
      "PreToolUse, http hook",
      s.http,
      s.rawRequest,
      `${plan.inProcess} each; POST /hook/PreToolUse with the bearer token; ${rawReq}`,
      cpu.pair("http", "rawRequest"),
    ),
    {
      name: "seat idle RSS",
      unit: "MiB",
      cotal: idle.connector.rss,
      raw: idle.raw.rss,
      better: "lower",
      note: `node dist/connector.mjs joined and idle ${plan.idleMs / 1000} s (peak ${fmt(idle.connector.peak)} MiB); raw: the raw seat process (peak ${fmt(idle.raw.peak)} MiB)`,
    },
    {
      name: "seat idle RSS, plugin's flags",
      unit: "MiB",
      cotal: idle.connectorLean.rss,
      raw: idle.rawLean.rss,
      better: "lower",
      note: `${CONNECTOR_NODE_FLAGS.join(" ")} on both (peaks ${fmt(idle.connectorLean.peak)} and ${fmt(idle.rawLean.peak)} MiB)`,
    },
  ];
  const lines = [`of a command hook, Node starting (node -e ""): p50 ${fmt(s.floor.p50)} ms, p99 ${fmt(s.floor.p99)} ms (n=${s.floor.n})`];
  return {
    rows,
    lines,
    tallies: {
      "command hook cotal": answers.command.tally,
      "command hook raw": answers.rawCommand.tally,
      relay: answers.relay.tally,
      "relay, a new tool": answers.relayNewTool.tally,
      http: answers.http.tally,
      "raw request": answers.rawRequest.tally,
    },
    detail: { ...s, idleMiB: idle },
  };
}

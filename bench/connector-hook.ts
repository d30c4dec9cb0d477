// Connector hook overhead per tool call (PreToolUse round trip, p50/p99) for each transport, and
// the connector's idle RSS. Standalone: `npm run build && node dist/bench-connector.mjs`.
// Starts a private nats-server (never the shared one), the mesh service in-process, and the
// connector bundle as a child joined from launch material with the HTTP hook listener on.
//   command: spawn `node dist/hook.mjs PreToolUse` with a real payload on stdin, until it exits
//            (what Claude pays per tool call with a command hook);
//   node floor: spawn `node -e ""` (the part of the above that is Node starting up);
//   relay: the same relay code run in-process (socket round trip only, no process start);
//   http: POST /hook/PreToolUse with the bearer token (what an http hook costs).
// BENCH_QUICK=1 runs smaller counts.
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { connect } from "@nats-io/transport-node";
import { Endpoint, MeshService } from "../broker/index.js";
import { runHook } from "../connector/index.js";
import { NatsServer } from "../testbed/nats-server.js";
import { summarize, type Summary } from "./stats.js";
import { freePort } from "../testbed/ports.js";

process.env.COTAL_LOG_LEVEL ??= "warn";
const QUICK = process.env.BENCH_QUICK === "1";
const PLAN = QUICK ? { command: 20, relay: 200, http: 200, idleMs: 3_000 } : { command: 100, relay: 2_000, http: 2_000, idleMs: 8_000 };
const SPACE = "benchhook";
const dist = path.dirname(fileURLToPath(import.meta.url));
const CONNECTOR = path.join(dist, "connector.mjs");
const HOOK = path.join(dist, "hook.mjs");
const PAYLOAD = JSON.stringify({
  session_id: "bench-session",
  transcript_path: "/tmp/bench.jsonl",
  cwd: process.cwd(),
  hook_event_name: "PreToolUse",
  tool_name: "Bash",
  tool_input: { command: "ls -la", description: "list files" },
  tool_use_id: "toolu_bench",
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const ms = (t0: bigint) => Number(process.hrtime.bigint() - t0) / 1e6;

function runChild(cmd: string, args: string[], stdin: string, env: NodeJS.ProcessEnv): Promise<{ ms: number; out: string }> {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const c = spawn(cmd, args, { env, stdio: ["pipe", "pipe", "ignore"] });
    let out = "";
    c.stdout.setEncoding("utf8").on("data", (s: string) => (out += s));
    c.on("error", reject);
    c.on("exit", () => resolve({ ms: ms(t0), out }));
    c.stdin.end(stdin);
  });
}

function rssKiB(pid: number): { rss: number; hwm: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const get = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? NaN);
  return { rss: get("VmRSS"), hwm: get("VmHWM") };
}

interface Seat {
  pid: number;
  stop: () => Promise<void>;
}

/** Start the connector bundle for `name` (launch material, http on) and wait until it joined. */
async function startSeat(server: NatsServer, ctl: string, name: string, token: string, httpPort: number, nodeFlags: string[] = []): Promise<Seat> {
  const material = path.join(ctl, `${name}.json`);
  writeFileSync(material, JSON.stringify({ server: server.url, space: SPACE, name, controlToken: token, controlDir: ctl, httpPort }), { mode: 0o600 });
  const child = spawn(process.execPath, [...nodeFlags, CONNECTOR], {
    env: { PATH: process.env.PATH ?? "", COTAL_LAUNCH_MATERIAL: material, COTAL_LOG_LEVEL: "warn" },
    stdio: ["pipe", "ignore", "inherit"],
  });
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  const watcher = await Endpoint.connect({ server: server.url, space: SPACE, name: `watch_${name}` });
  const roster = await watcher.roster();
  const deadline = Date.now() + 15_000;
  while (roster.get(`local.${name}`)?.status !== "idle") {
    if (Date.now() > deadline) throw new Error(`connector ${name} did not join within 15 s`);
    await sleep(20);
  }
  await watcher.close();
  return {
    pid: child.pid!,
    stop: async () => {
      child.stdin.end();
      await Promise.race([exited, sleep(5_000)]);
      if (child.exitCode === null) child.kill("SIGKILL");
    },
  };
}

function line(name: string, s: Summary): string {
  return `${name.padEnd(34)} p50 ${s.p50.toFixed(2).padStart(7)} ms   p99 ${s.p99.toFixed(2).padStart(7)} ms   (n=${s.n}, mean ${s.mean.toFixed(2)}, max ${s.max.toFixed(2)})`;
}

async function main(): Promise<void> {
  const ctl = mkdtempSync(path.join(os.tmpdir(), "cotal-bench-hook-"));
  const server = await NatsServer.start();
  const nc = await connect({ servers: server.url, name: "mesh-service" });
  const service = await MeshService.start(nc, SPACE);
  const token = "b".repeat(48);
  const port = await freePort();
  const seats: Seat[] = [];
  try {
    const seat = await startSeat(server, ctl, "bob", token, port);
    seats.push(seat);
    const hookEnv = { PATH: process.env.PATH ?? "", COTAL_LAUNCH_MATERIAL: path.join(ctl, "bob.json") };

    // Warm up every path (page cache, JIT, connections).
    for (let i = 0; i < 5; i++) await runChild(process.execPath, [HOOK, "PreToolUse"], PAYLOAD, hookEnv);
    const probe = await runChild(process.execPath, [HOOK, "PreToolUse"], PAYLOAD, hookEnv);
    if (probe.out.trim() !== "{}") throw new Error(`the hook printed ${JSON.stringify(probe.out)}`);

    const floor: number[] = [];
    const command: number[] = [];
    for (let i = 0; i < PLAN.command; i++) {
      floor.push((await runChild(process.execPath, ["-e", ""], "", hookEnv)).ms);
      command.push((await runChild(process.execPath, [HOOK, "PreToolUse"], PAYLOAD, hookEnv)).ms);
    }

    const relay: number[] = [];
    const sink = { write: async () => undefined };
    for (let i = 0; i < 50; i++) await runHook("PreToolUse", PAYLOAD, hookEnv, { io: sink });
    for (let i = 0; i < PLAN.relay; i++) {
      const t0 = process.hrtime.bigint();
      await runHook("PreToolUse", PAYLOAD, hookEnv, { io: sink });
      relay.push(ms(t0));
    }

    const http: number[] = [];
    const url = `http://127.0.0.1:${port}/hook/PreToolUse`;
    const post = async () => {
      const r = await fetch(url, { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: PAYLOAD });
      if (r.status !== 200) throw new Error(`http hook answered ${r.status}`);
      await r.text();
    };
    for (let i = 0; i < 50; i++) await post();
    for (let i = 0; i < PLAN.http; i++) {
      const t0 = process.hrtime.bigint();
      await post();
      http.push(ms(t0));
    }

    // Idle RSS: the default connector, and one started with the plugin's size flags.
    const lean = await startSeat(server, ctl, "carol", token, 0, ["--optimize-for-size", "--max-semi-space-size=1"]);
    seats.push(lean);
    await sleep(PLAN.idleMs);
    const idle = rssKiB(seat.pid);
    const idleLean = rssKiB(lean.pid);

    const s = { floor: summarize(floor), command: summarize(command), relay: summarize(relay), http: summarize(http) };
    const cpu = os.cpus();
    console.log(`Connector hook overhead — ${cpu.length} × ${cpu[0]?.model ?? "cpu"}, Node ${process.version}, loopback${QUICK ? ", BENCH_QUICK=1" : ""}`);
    console.log(line("PreToolUse, command hook", s.command));
    console.log(line("  of which Node start (node -e '')", s.floor));
    console.log(line("PreToolUse, relay only (in-process)", s.relay));
    console.log(line("PreToolUse, http hook", s.http));
    console.log(
      `connector idle RSS                 ${(idle.rss / 1024).toFixed(1)} MiB (peak ${(idle.hwm / 1024).toFixed(1)} MiB) after ${PLAN.idleMs / 1000}s idle`,
    );
    console.log(`  with --optimize-for-size --max-semi-space-size=1: ${(idleLean.rss / 1024).toFixed(1)} MiB (peak ${(idleLean.hwm / 1024).toFixed(1)} MiB)`);
    if (process.env.BENCH_JSON) writeFileSync(process.env.BENCH_JSON, JSON.stringify({ ...s, idleRssKiB: idle, idleRssLeanKiB: idleLean }, null, 2));
  } finally {
    for (const seat of seats.reverse()) await seat.stop().catch(() => undefined);
    await service.stop().catch(() => undefined);
    await nc.close().catch(() => undefined);
    await server.cleanup();
    rmSync(ctl, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);

// The manager's costs, each beside the raw NATS client doing the same in the same run:
//   spawn → joined: `spawn` of an echo seat (admit, seat log, launch material, child process,
//     join through the mesh service) until its presence shows it joined; raw: start a node child
//     that connects with the raw client and writes the same presence key, until the write shows.
//   50 echo seats: their manager's and the broker's memory, the seats' own;
//   DM round trip through all 50: DM each seat, until every echo is back (Cotal's DMs, durable
//     and acked); raw: the same 50 JetStream publishes to one raw child that echoes each back.
//   (The DM-to-woken time of an idle Claude seat needs the model double: test/e2e/managed-claude.)
// Standalone: `npm run build && node dist/bench-manager.mjs` (also run by `npm run bench`).
// BENCH_QUICK=1 runs smaller counts. Starts its own nats-server, never the shared one.
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { controlCaller, Endpoint, logger, MeshService } from "../broker/index.js";
import { ManagerService } from "../manager/index.js";
import { localPrincipal, MANAGER_COMMANDS, messageText, names } from "../schemas/index.js";
import { NatsServer } from "../testbed/nats-server.js";
import { fmt, renderTable, type Row } from "./report.js";
import { summarize } from "./stats.js";

process.env.COTAL_LOG_LEVEL ??= "warn";
const QUICK = process.env.BENCH_QUICK === "1";
const PLAN = QUICK ? { spawns: 5, seats: 10 } : { spawns: 20, seats: 50 };
const SPACE = "benchmgr";
const dist = path.dirname(fileURLToPath(import.meta.url));
const CLI = path.join(dist, "cotal.mjs");
const ROOT = path.resolve(dist, "..");
const callManager = controlCaller(MANAGER_COMMANDS);
const operator = localPrincipal("cotal_cli");

/** Resident memory of a process, MiB (Linux /proc). */
function rssMiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return m ? Number(m[1]) / 1024 : NaN;
}

/** Resolves when `subject` first carries a record that is not `offline`. */
function firstPresence(nc: NatsConnection, subject: string): Promise<void> {
  return new Promise((resolve) => {
    const sub = nc.subscribe(subject, {
      callback: (_e, m) => {
        if (!new TextDecoder().decode(m.data).includes('"offline"')) {
          sub.unsubscribe();
          resolve();
        }
      },
    });
  });
}

/** A raw-client child: connect, write one presence key, stay until killed. */
function rawJoiner(url: string, subject: string, name: string) {
  const record = { card: { id: `local.${name}`, name, kind: "endpoint" }, status: "idle" };
  const script = `import { connect } from "@nats-io/transport-node";
const nc = await connect({ servers: ${JSON.stringify(url)} });
await nc.request(${JSON.stringify(subject)}, JSON.stringify({ ...${JSON.stringify(record)}, ts: Date.now() }));
setInterval(() => {}, 1 << 30);`;
  return spawn(process.execPath, ["--input-type=module", "-e", script], { cwd: ROOT, stdio: "ignore" });
}

/** A raw-client child echoing every message on `bench.echo.*` back to `bench.back.<n>` through JetStream. */
function rawEchoer(url: string) {
  const script = `import { connect } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";
const nc = await connect({ servers: ${JSON.stringify(url)} });
const js = jetstream(nc);
nc.subscribe("bench.echo.*", { callback: async (_e, m) => { await js.publish("bench.back." + m.subject.split(".")[2], m.data); } });
await nc.flush();
process.stdout.write("ready\\n");`;
  return spawn(process.execPath, ["--input-type=module", "-e", script], { cwd: ROOT, stdio: ["ignore", "pipe", "ignore"] });
}

async function main(): Promise<void> {
  const server = await NatsServer.start({ jetstream: { maxMemoryStore: "256MB", maxFileStore: "4GB" } });
  const state = mkdtempSync(path.join(os.tmpdir(), "cotal-bench-mgr-"));
  const nc = await connect({ servers: server.url, name: "bench-manager" });
  const service = await MeshService.start(nc, SPACE);
  const rows: Row[] = [];
  let mgr: ManagerService | undefined;
  try {
    const rssBefore = process.memoryUsage().rss / 1024 ** 2;
    mgr = await ManagerService.start(nc, {
      space: SPACE,
      server: server.url,
      stateDir: state,
      instance: "bench",
      mints: false,
      jsConnection: nc,
      agentCommand: (agent) => [process.execPath, CLI, "agent", agent],
      seatEnv: (extra) => ({ PATH: process.env.PATH ?? "", HOME: os.homedir(), COTAL_LOG_LEVEL: "warn", ...extra }),
      maxSeats: PLAN.seats + PLAN.spawns + 5,
      log: logger("bench-manager"),
    });
    const presence = (name: string) => `$KV.${names.presenceBucket(SPACE)}.local.${name}`;

    // spawn → joined, sequential, alternating with the raw equivalent.
    const cotal: number[] = [];
    const raw: number[] = [];
    for (let i = 0; i < PLAN.spawns; i++) {
      let t = performance.now();
      const joined = firstPresence(nc, presence(`s${i}`));
      await callManager(nc, SPACE, "spawn", operator, { agent: "echo", name: `s${i}` }, { target: "bench", timeoutMs: 30_000 });
      await joined;
      cotal.push(performance.now() - t);
      await callManager(nc, SPACE, "stop", operator, { name: `s${i}` }, { target: "bench", timeoutMs: 30_000 });
      t = performance.now();
      const seen = firstPresence(nc, presence(`r${i}`));
      const child = rawJoiner(server.url, presence(`r${i}`), `r${i}`);
      await seen;
      raw.push(performance.now() - t);
      child.kill();
    }
    const c = summarize(cotal);
    const r = summarize(raw);
    const note = `${PLAN.spawns} echo seats one after another; raw: a node child writing the presence key with the raw client`;
    rows.push({ name: "spawn → joined p50", unit: "ms", cotal: c.p50, raw: r.p50, better: "lower", note });
    rows.push({ name: "spawn → joined p99", unit: "ms", cotal: c.p99, raw: r.p99, better: "lower" });

    // N echo seats at once.
    const seatNames = Array.from({ length: PLAN.seats }, (_, i) => `e${i}`);
    for (let i = 0; i < seatNames.length; i += 10) {
      const batch = seatNames.slice(i, i + 10);
      const joined = batch.map((n) => firstPresence(nc, presence(n)));
      await Promise.all(batch.map((n) => callManager(nc, SPACE, "spawn", operator, { agent: "echo", name: n }, { target: "bench", timeoutMs: 60_000 })));
      await Promise.all(joined);
    }
    const ps = await callManager(nc, SPACE, "ps", operator, { all: false }, { target: "bench" });
    const seatRss = ps.seats.filter((v) => v.pid !== undefined && seatNames.includes(v.name)).map((v) => rssMiB(v.pid!));

    // DM round trip through all of them.
    const asker = await Endpoint.connect({ server: server.url, space: SPACE, name: "asker" });
    await asker.join();
    const back = new Set<string>();
    const done = (async () => {
      for await (const d of asker.deliveries) {
        back.add(messageText(d.message));
        await d.ack();
        if (back.size === seatNames.length) return;
      }
    })();
    let t = performance.now();
    await Promise.all(seatNames.map((n) => asker.dm(`local.${n}`, `ping ${n}`)));
    await done;
    const cotalRound = performance.now() - t;
    await asker.close();

    const jsm = await (await import("@nats-io/jetstream")).jetstreamManager(nc);
    await jsm.streams.add({ name: "BENCH_ECHO", subjects: ["bench.echo.*", "bench.back.*"] });
    const echoer = rawEchoer(server.url);
    await new Promise((res) => echoer.stdout!.once("data", res));
    const got = new Set<string>();
    const backSub = nc.subscribe("bench.back.*", {
      callback: (_e, m) => {
        got.add(m.subject);
      },
    });
    const js = (await import("@nats-io/jetstream")).jetstream(nc);
    t = performance.now();
    await Promise.all(seatNames.map((n) => js.publish(`bench.echo.${n}`, `ping ${n}`)));
    while (got.size < seatNames.length) await new Promise((res) => setTimeout(res, 1));
    const rawRound = performance.now() - t;
    backSub.unsubscribe();
    echoer.kill();

    rows.push({
      name: `DM round trip through ${PLAN.seats} echo seats`,
      unit: "ms",
      cotal: cotalRound,
      raw: rawRound,
      better: "lower",
      note: "all sent at once, until every echo is back; raw: JetStream publishes both ways, echoed by one raw child",
    });
    const mgrRss = process.memoryUsage().rss / 1024 ** 2 - rssBefore;
    console.log(`cotal bench-manager: ${os.cpus().length} × ${os.cpus()[0]?.model ?? "cpu"}, Node ${process.version}${QUICK ? ", BENCH_QUICK=1" : ""}\n`);
    console.log(renderTable(rows));
    console.log(
      `\nwith ${PLAN.seats} echo seats: manager +${fmt(mgrRss)} MiB RSS (in the benchmark process), nats-server ${server.pid ? fmt(rssMiB(server.pid)) : "n/a"} MiB, ` +
        `each seat p50 ${fmt(summarize(seatRss).p50)} MiB (${fmt(seatRss.reduce((a, b) => a + b, 0))} MiB together)`,
    );
  } finally {
    await mgr?.stopWithSeats(operator).catch(() => undefined);
    await service.stop().catch(() => undefined);
    await nc.close().catch(() => undefined);
    await server.cleanup();
    rmSync(state, { recursive: true, force: true });
  }
}

await main();

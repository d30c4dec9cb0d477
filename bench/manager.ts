// The manager's costs, each beside the raw NATS client doing the same in the same run:
//   spawn → joined: `spawn` of an echo seat (admit, seat log, launch material, child process,
//     join through the mesh service) until its presence shows it joined; raw: start a node child
//     that connects with the raw client and writes the same presence key, until the write shows.
//   50 echo seats: their manager's and the broker's memory, the seats' own (RSS, and PSS: the
//     pages 50 copies of node share counted once between them); raw: 50 raw children, the same;
//   DM round trip through all 50: DM each seat, until every echo is back (Cotal's DMs, durable
//     and acked), twice (the first wakes 50 cold processes); raw: the same 50 JetStream publishes,
//     each to its own raw child that reads it from a durable consumer of its own, echoes it back
//     and acks it (what a seat does with its inbox), twice; to one raw child that echoes them all;
//     and to 50 raw children reading with plain subscriptions (no consumer, no ack), twice.
//   (The DM-to-woken time of an idle Claude seat needs the model double: test/e2e/managed-claude.)
// `node dist/bench-manager.mjs` (run by `npm run bench`; BENCH_QUICK=1: smaller counts). Starts
// its own nats-server, never the shared one.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { z } from "zod";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { controlCaller, Endpoint, logger, MeshService } from "../broker/index.js";
import { ECHO_SEAT_NODE_FLAGS, echoSeatCommand, ManagerService } from "../manager/index.js";
import { localPrincipal, MANAGER_COMMANDS, messageText, names } from "../schemas/index.js";
import { NatsServer } from "../testbed/nats-server.js";
import { CpuAccount, type CpuPerMessage } from "./cpu.js";
import { until } from "../testbed/until.js";
import { Arrivals } from "./checks.js";
import { Counter, leftPending, streamPending, Unconfirmed, unconfirmedNote, unconfirmedOf, withTimeout } from "./context.js";
import { fmt, type BenchReport, type BenchRun, type Row } from "./report.js";
import { summarize } from "./stats.js";

export interface ManagerPlan {
  /** Echo seats spawned one after another (each until joined, then stopped), and as many raw children. */
  spawns: number;
  /** Echo seats running at once, each DMed once. */
  seats: number;
}

export const MANAGER_PLANS: Record<"full" | "quick" | "smoke", ManagerPlan> = {
  full: { spawns: 20, seats: 50 },
  quick: { spawns: 5, seats: 10 },
  smoke: { spawns: 1, seats: 2 },
};

/** What the bench starts: the echo seat's bundle (as `cotal manager` runs it, with its flags) and the project root (raw children resolve the NATS client there). */
export interface ManagerPaths {
  seat: string;
  root: string;
}

const SPACE = "benchmgr";
/** A seat, a manager call or the echoes that never come: generous, ten seats start at once on a loaded 2-core machine (only a hang should stop the run). */
const JOIN_TIMEOUT_MS = 180_000;
const callManager = controlCaller(MANAGER_COMMANDS);
const operator = localPrincipal("cotal_cli");

/** A process's memory, MiB: resident (RSS), and its proportional share (PSS: a page shared by k processes counts 1/k); Linux /proc. */
interface Memory {
  rss: number;
  pss: number;
}

function memoryOf(pid: number): Memory {
  const field = (text: string, name: string) => {
    const m = new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(text);
    return m ? Number(m[1]) / 1024 : NaN;
  };
  try {
    const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, "utf8");
    return { rss: field(rollup, "Rss"), pss: field(rollup, "Pss") };
  } catch {
    return { rss: field(readFileSync(`/proc/${pid}/status`, "utf8"), "VmRSS"), pss: NaN };
  }
}

/** RSS p50 and PSS per process (their sum ÷ their number) of processes running at once. */
function memoryOfAll(pids: number[]): { rssP50: number; rssSum: number; pssEach: number } {
  const ms = pids.map(memoryOf);
  const pss = ms.reduce((a, m) => a + m.pss, 0);
  return { rssP50: summarize(ms.map((m) => m.rss)).p50, rssSum: ms.reduce((a, m) => a + m.rss, 0), pssEach: pss / ms.length };
}

/** Resolves when `subject` first carries a record that is not `offline`; fails after JOIN_TIMEOUT_MS saying who never joined. */
function firstPresence(nc: NatsConnection, subject: string): Promise<void> {
  const seen = new Promise<void>((resolve) => {
    const sub = nc.subscribe(subject, {
      callback: (_e, m) => {
        if (!new TextDecoder().decode(m.data).includes('"offline"')) {
          sub.unsubscribe();
          resolve();
        }
      },
    });
  });
  return withTimeout(seen, JOIN_TIMEOUT_MS, `a presence record on ${subject}`);
}

/**
 * A raw-client child (with the echo seat's node flags): connect, write one presence key, print
 * where its start went (the echo seat's phases: process start, boot, load, connect, then the
 * write), stay until killed.
 */
function rawJoiner(root: string, url: string, subject: string, name: string): ChildProcess {
  const record = { card: { id: `local.${name}`, name, kind: "endpoint" }, status: "idle" };
  const script = `import { connect } from "@nats-io/transport-node";
const loaded = performance.now();
const nc = await connect({ servers: ${JSON.stringify(url)}, noAsyncTraces: true });
const connected = performance.now();
await nc.request(${JSON.stringify(subject)}, JSON.stringify({ ...${JSON.stringify(record)}, ts: Date.now() }));
const boot = performance.nodeTiming.bootstrapComplete;
process.stdout.write(JSON.stringify({ startedAt: performance.timeOrigin, boot, load: loaded - boot, connect: connected - loaded, join: performance.now() - connected }) + "\\n");
setInterval(() => {}, 1 << 30);`;
  return spawn(process.execPath, [...ECHO_SEAT_NODE_FLAGS, "--input-type=module", "-e", script], { cwd: root, stdio: ["ignore", "pipe", "ignore"] });
}

const Phases = z.object({ startedAt: z.number(), boot: z.number(), load: z.number(), connect: z.number(), join: z.number() });
type Phases = z.infer<typeof Phases>;

/** The startup phases an echo seat logged with "echo agent joined" (manager/echo-agent.ts), once the line is there. */
function seatPhases(stateDir: string, name: string): Phases | undefined {
  let text: string;
  try {
    text = readFileSync(path.join(stateDir, "seats", name, "seat.log"), "utf8");
  } catch {
    return undefined;
  }
  const line = text.split("\n").find((l) => l.includes('"echo agent joined"'));
  return line ? Phases.parse((JSON.parse(line) as { startup?: unknown }).startup) : undefined;
}

/** The first line a raw joiner prints: its phases. */
function rawPhases(child: ChildProcess): Promise<Phases> {
  return new Promise((resolve, reject) => {
    child.stdout!.once("data", (b: Buffer) => {
      try {
        resolve(Phases.parse(JSON.parse(b.toString().split("\n")[0]!)));
      } catch (err) {
        reject(err instanceof Error ? err : new Error(String(err)));
      }
    });
  });
}

/** "spawn → process 12, boot 40, …" from p50s of each phase, `sinceSpawn` the epoch ms each spawn was asked. */
function phaseLine(phases: Phases[], sinceSpawn: number[], join: string): string {
  const p50 = (xs: number[]) => fmt(summarize(xs).p50);
  const starting = phases.map((p, i) => p.startedAt - sinceSpawn[i]!);
  return `spawn → process ${p50(starting)}, node boot ${p50(phases.map((p) => p.boot))}, load ${p50(phases.map((p) => p.load))}, connect ${p50(phases.map((p) => p.connect))}, ${join} ${p50(phases.map((p) => p.join))}`;
}

/**
 * How a raw echo child reads what it echoes. `consumer`: a durable pull consumer of its own, each
 * message acked after its echo is stored, what Cotal's seat does for a DM (a message sent while the
 * child is busy or down waits for it). `subscription`: a plain subscription on the stream's
 * subject, nothing to ack, and nothing kept for a child that is not there (the baseline).
 */
type RawRead = "consumer" | "subscription";

/** A raw-client child (with the echo seat's node flags) echoing every message on `filter` (`bench.echo.<n>`, or `bench.echo.*`) back to `bench.back.<n>` through JetStream. */
function rawEchoer(root: string, url: string, filter: string, read: RawRead, durable: string): ChildProcess {
  const echo = `const back = "bench.back." + m.subject.split(".")[2];`;
  const body =
    read === "consumer"
      ? `await jetstreamManager(nc).then((jsm) => jsm.consumers.add("BENCH_ECHO", { durable_name: ${JSON.stringify(durable)}, filter_subject: ${JSON.stringify(filter)}, ack_policy: "explicit", deliver_policy: "new" }));
const messages = await js.consumers.get("BENCH_ECHO", ${JSON.stringify(durable)}).then((c) => c.consume());
void (async () => { for await (const m of messages) { ${echo} await js.publish(back, m.data, { msgID: "echo." + m.seq }); await m.ackAck(); } })();`
      : `nc.subscribe(${JSON.stringify(filter)}, { callback: async (_e, m) => { ${echo} await js.publish(back, m.data); } });`;
  const script = `import { connect } from "@nats-io/transport-node";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
const nc = await connect({ servers: ${JSON.stringify(url)}, noAsyncTraces: true });
const js = jetstream(nc);
${body}
await nc.flush();
process.stdout.write("ready\\n");`;
  return spawn(process.execPath, [...ECHO_SEAT_NODE_FLAGS, "--input-type=module", "-e", script], { cwd: root, stdio: ["ignore", "pipe", "ignore"] });
}

export async function managerBench(plan: ManagerPlan & { paths: ManagerPaths }, { td, step }: BenchRun): Promise<BenchReport> {
  const { paths } = plan;
  const server = await NatsServer.start({ jetstream: { maxMemoryStore: "256MB", maxFileStore: "4GB" } });
  td.defer(() => server.cleanup());
  const state = mkdtempSync(path.join(os.tmpdir(), "cotal-bench-mgr-"));
  td.defer(() => rmSync(state, { recursive: true, force: true }));
  const nc = await connect({ servers: server.url, name: "bench-manager" });
  td.defer(() => nc.close());
  const service = await MeshService.start(nc, SPACE);
  td.defer(() => service.stop());
  const children: ChildProcess[] = [];
  td.defer(() => children.forEach((c) => c.kill()));
  const rows: Row[] = [];
  const rssBefore = process.memoryUsage().rss / 1024 ** 2;
  const mgr = await ManagerService.start(nc, {
    space: SPACE,
    server: server.url,
    stateDir: state,
    instance: "bench",
    mints: false,
    jsConnection: nc,
    agentCommand: () => echoSeatCommand(paths.seat),
    // info: a seat logs where its start went with "echo agent joined" (the spawn part reads it).
    seatEnv: (extra) => ({ PATH: process.env.PATH ?? "", HOME: os.homedir(), COTAL_LOG_LEVEL: "info", ...extra }),
    maxSeats: plan.seats + plan.spawns + 5,
    log: logger("bench-manager"),
  });
  td.defer(() => mgr.stopWithSeats(operator));
  const presence = (name: string) => `$KV.${names.presenceBucket(SPACE)}.local.${name}`;

  step(`spawn → joined: ${plan.spawns} echo seats one after another, alternating with raw children`);
  const cotal: number[] = [];
  const raw: number[] = [];
  const phases = { cotal: [] as Phases[], raw: [] as Phases[], cotalAsked: [] as number[], rawAsked: [] as number[] };
  const epoch = () => performance.timeOrigin + performance.now();
  let rawSeat: ChildProcess | undefined;
  for (let i = 0; i < plan.spawns; i++) {
    let t = performance.now();
    phases.cotalAsked.push(epoch());
    const joined = firstPresence(nc, presence(`s${i}`));
    await callManager(nc, SPACE, "spawn", operator, { agent: "echo", name: `s${i}` }, { target: "bench", timeoutMs: JOIN_TIMEOUT_MS });
    await joined;
    cotal.push(performance.now() - t);
    let logged: Phases | undefined;
    await until(() => (logged = seatPhases(state, `s${i}`)) !== undefined, JOIN_TIMEOUT_MS, `seat s${i}'s "echo agent joined" line`, 20);
    phases.cotal.push(logged!);
    await callManager(nc, SPACE, "stop", operator, { name: `s${i}` }, { target: "bench", timeoutMs: JOIN_TIMEOUT_MS });
    t = performance.now();
    phases.rawAsked.push(epoch());
    const seen = firstPresence(nc, presence(`r${i}`));
    rawSeat?.kill();
    rawSeat = rawJoiner(paths.root, server.url, presence(`r${i}`), `r${i}`);
    children.push(rawSeat);
    const printed = rawPhases(rawSeat);
    await seen;
    raw.push(performance.now() - t);
    phases.raw.push(await withTimeout(printed, JOIN_TIMEOUT_MS, `raw joiner r${i}'s phases`));
  }
  const c = summarize(cotal);
  const r = summarize(raw);
  const note = `${plan.spawns} echo seats one after another; raw: a node child writing the presence key with the raw client`;
  rows.push({ name: "spawn → joined p50", unit: "ms", cotal: c.p50, raw: r.p50, better: "lower", note });
  rows.push({ name: "spawn → joined p99", unit: "ms", cotal: c.p99, raw: r.p99, better: "lower" });

  rawSeat?.kill();

  step(`${plan.seats} echo seats at once, 10 spawns at a time`);
  const seatNames = Array.from({ length: plan.seats }, (_, i) => `e${i}`);
  for (let i = 0; i < seatNames.length; i += 10) {
    const batch = seatNames.slice(i, i + 10);
    const joined = batch.map((n) => firstPresence(nc, presence(n)));
    await Promise.all(batch.map((n) => callManager(nc, SPACE, "spawn", operator, { agent: "echo", name: n }, { target: "bench", timeoutMs: JOIN_TIMEOUT_MS })));
    await Promise.all(joined);
  }
  const ps = await callManager(nc, SPACE, "ps", operator, { all: false }, { target: "bench" });
  const seatPids = ps.seats.filter((v) => v.pid !== undefined && seatNames.includes(v.name)).map((v) => v.pid!);

  step(`DM round trip through ${plan.seats} echo seats, twice`);
  const asker = await Endpoint.connect({ server: server.url, space: SPACE, name: "asker" });
  td.defer(() => asker.close());
  await asker.join();
  const back = new Arrivals();
  const echoes = new Counter();
  const unconfirmed = new Unconfirmed();
  const acks: Promise<void>[] = [];
  // The asker acks each echo without waiting for the confirmation before reading the next (its acks
  // are confirmed in batches, broker/ack-batch.ts); every confirmation is awaited before the count.
  void (async () => {
    for await (const d of asker.deliveries) {
      if (back.add(messageText(d.message))) echoes.add();
      acks.push(d.ack().catch((err: unknown) => unconfirmed.note(err)));
    }
  })();
  const cotalRounds: number[] = [];
  // CPU per round trip: this process (asker, mesh service, manager), nats-server and every seat.
  const serverPids = server.pid ? [server.pid] : [];
  const cotalCpu = new CpuAccount<"1" | "2">(() => [...serverPids, ...seatPids], "echo-cotal");
  for (const round of [1, 2] as const) {
    await cotalCpu.measure(`${round}`, seatNames.length, async () => {
      const t = performance.now();
      await Promise.all(seatNames.map((n) => asker.dm(`local.${n}`, `ping ${round} ${n}`)));
      await withTimeout(echoes.reach(round * seatNames.length), JOIN_TIMEOUT_MS, `echoes from ${seatNames.length} seats (${echoes.value} back)`);
      cotalRounds.push(performance.now() - t);
    });
  }
  await Promise.all(acks);
  const seatMem = memoryOfAll(seatPids);
  const jsm = await jetstreamManager(nc);
  // Every DM of the run (asker's and seats' inboxes, the stopped seats' too) was acked.
  const dmPending = await streamPending(jsm, `DM_${SPACE}`, unconfirmed.settleMs);
  for (let i = 0; i < seatNames.length; i += 10)
    await Promise.all(
      seatNames.slice(i, i + 10).map((n) => callManager(nc, SPACE, "stop", operator, { name: n }, { target: "bench", timeoutMs: JOIN_TIMEOUT_MS })),
    );

  step(`the same through ${plan.seats} raw echo children (durable consumers, acked), twice, then through one; then with plain subscriptions`);
  await jsm.streams.add({ name: "BENCH_ECHO", subjects: ["bench.echo.*", "bench.back.*"] });
  // The raw asker reads the echoes as Cotal's does: a durable consumer, each echo acked.
  await jsm.consumers.add("BENCH_ECHO", {
    durable_name: "asker",
    filter_subject: "bench.back.*",
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.New,
  });
  const js = jetstream(nc);
  const got = new Arrivals();
  const gotCount = new Counter();
  const rawUnconfirmed = new Unconfirmed();
  const rawAcks: Promise<unknown>[] = [];
  const askerMessages = await (await js.consumers.get("BENCH_ECHO", "asker")).consume();
  td.defer(() => askerMessages.stop());
  void (async () => {
    for await (const m of askerMessages) {
      if (got.add(m.string())) gotCount.add();
      rawAcks.push(m.ackAck().catch((err: unknown) => rawUnconfirmed.note(err)));
    }
  })();
  /** Start one raw echo child per filter, each with a durable of its own when it reads a consumer; resolves once all are ready. */
  const echoers = async (filters: string[], read: RawRead): Promise<{ started: ChildProcess[]; durables: string[] }> => {
    const durables = filters.map((_, i) => `echo_${read}_${filters.length}_${i}`);
    const started = filters.map((f, i) => rawEchoer(paths.root, server.url, f, read, durables[i]!));
    children.push(...started);
    await Promise.all(started.map((c) => new Promise((res) => c.stdout!.once("data", res))));
    return { started, durables };
  };
  let rawRound = 0;
  const rawRoundTrip = async (): Promise<number> => {
    rawRound += 1;
    const t = performance.now();
    await Promise.all(seatNames.map((n) => js.publish(`bench.echo.${n}`, `ping ${rawRound} ${n}`, { msgID: `${rawRound}.${n}` })));
    await withTimeout(gotCount.reach(rawRound * seatNames.length), JOIN_TIMEOUT_MS, `raw echoes (${gotCount.value} of ${rawRound * seatNames.length} back)`);
    return performance.now() - t;
  };
  const perSeatFilters = seatNames.map((n) => `bench.echo.${n}`);
  const each = await echoers(perSeatFilters, "consumer");
  const rawCpu = new CpuAccount<"1" | "2">(() => [...serverPids, ...each.started.flatMap((c) => (c.pid ? [c.pid] : []))], "echo-raw");
  const rawRounds = [await rawCpu.measure("1", seatNames.length, rawRoundTrip), await rawCpu.measure("2", seatNames.length, rawRoundTrip)];
  const roundCpu = (r: "1" | "2"): CpuPerMessage => ({ cotal: cotalCpu.perMessage(r), raw: rawCpu.perMessage(r) });
  const rawMem = memoryOfAll(each.started.map((c) => c.pid!));
  // Every echo child acked what it echoed before it is stopped (what it holds would be left over).
  let echoPending = await leftPending(jsm, "BENCH_ECHO", each.durables);
  each.started.forEach((c) => c.kill());
  const one = await echoers(["bench.echo.*"], "consumer");
  const oneChild = await rawRoundTrip();
  echoPending += await leftPending(jsm, "BENCH_ECHO", one.durables);
  one.started.forEach((c) => c.kill());
  // Plain subscriptions read only what is published after them; the stopped children's durables
  // are left behind, idle (later rounds pile up there unread, and are not counted).
  const subscribers = await echoers(perSeatFilters, "subscription");
  const subscriptionRounds = [await rawRoundTrip(), await rawRoundTrip()];
  subscribers.started.forEach((c) => c.kill());
  await Promise.all(rawAcks);
  const rawPending = await leftPending(jsm, "BENCH_ECHO", ["asker"], rawUnconfirmed.settleMs);

  const acksNote = unconfirmedNote(unconfirmedOf({ asker: unconfirmed, "raw asker": rawUnconfirmed }));
  // The round trip's rows: Cotal's rounds beside each raw way of echoing (ms, lower is better).
  const round = (name: string, cotal: number, raw: number, note: string, cpu?: CpuPerMessage): Row => ({
    name,
    unit: "ms",
    cotal,
    raw,
    better: "lower",
    note,
    ...(cpu ? { cpu } : {}),
  });
  rows.push(
    round(
      `DM round trip through ${plan.seats} echo seats`,
      cotalRounds[0]!,
      rawRounds[0]!,
      `all sent at once, until every echo is back, the first DM each process handles; raw: JetStream publishes both ways, each echoed by its own raw child from a durable consumer of its own, acked, as a seat reads its inbox; cpu/msg: per round trip, this process, nats-server and every seat or child${acksNote}`,
      roundCpu("1"),
    ),
    round("the same, second round", cotalRounds[1]!, rawRounds[1]!, "the same seats and raw children again", roundCpu("2")),
    round(
      "the same, first round; raw: one child",
      cotalRounds[0]!,
      oneChild,
      "raw: one raw child echoes all from one durable consumer (one process, not one per seat)",
    ),
    round(
      "the same, first / second round; raw: plain subscriptions",
      cotalRounds[0]!,
      subscriptionRounds[0]!,
      `raw: ${plan.seats} raw children reading with a plain subscription on the stream's subject, nothing acked, nothing kept for a child that is down (the baseline); second round ${fmt(cotalRounds[1]!)} vs ${fmt(subscriptionRounds[1]!)} ms`,
    ),
  );
  const flags = ECHO_SEAT_NODE_FLAGS.join(" ");
  rows.push({
    name: "memory per echo seat (PSS)",
    unit: "MiB",
    cotal: seatMem.pssEach,
    raw: rawMem.pssEach,
    better: "lower",
    note: `PSS of the ${plan.seats} seats ÷ ${plan.seats}, after both rounds (pages they share, node's own, counted once); raw: the ${plan.seats} raw echo children the same way; both run with ${flags}`,
  });
  rows.push({
    name: "memory per echo seat (RSS p50)",
    unit: "MiB",
    cotal: seatMem.rssP50,
    raw: rawMem.rssP50,
    better: "lower",
    note: `resident pages of one seat, shared ones included (${fmt(seatMem.rssSum)} MiB summed over ${plan.seats}, counting node's shared pages ${plan.seats} times)`,
  });
  const mgrRss = process.memoryUsage().rss / 1024 ** 2 - rssBefore;
  const lines = [
    `spawn → joined, p50 of each phase (ms): Cotal ${phaseLine(phases.cotal, phases.cotalAsked, "join (its presence write, which the bench sees, then the roster and its inbox bound)")}; raw ${phaseLine(phases.raw, phases.rawAsked, "presence write")}`,
    `with ${plan.seats} echo seats: manager +${fmt(mgrRss)} MiB RSS (in the benchmark process), nats-server ${server.pid ? fmt(memoryOf(server.pid).rss) : "n/a"} MiB`,
  ];
  return {
    rows,
    lines,
    tallies: {
      "spawn cotal": { sent: plan.spawns, received: cotal.length, duplicates: 0, pending: 0 },
      "spawn raw": { sent: plan.spawns, received: raw.length, duplicates: 0, pending: 0 },
      "round trip cotal": back.tally(2 * seatNames.length, dmPending),
      "round trip raw": got.tally(5 * seatNames.length, rawPending + echoPending),
    },
    detail: {
      spawn: { cotal: c, raw: r, phases },
      roundTripMs: { cotal: cotalRounds, raw: rawRounds, rawOneChild: oneChild, rawSubscriptions: subscriptionRounds },
      memoryMiB: { seats: seatMem, rawChildren: rawMem, flags: ECHO_SEAT_NODE_FLAGS },
      managerMiB: mgrRss,
    },
  };
}

// Sustained DM throughput: N DMs with at most `inflight` publishes outstanding, timed until the
// recipient has received and acked every one. Cotal: Endpoint.dm → `deliveries` + Delivery.ack().
// Raw: js.publish with msgID → durable consume + ack(); and, to attribute the difference, the
// raw client acking with ackAck() the way Cotal's Delivery.ack() does.
import { randomUUID } from "node:crypto";
import { Arrivals, type Tally } from "./checks.js";
import { CpuAccount, type CpuPerMessage } from "./cpu.js";
import {
  addRawConsumer,
  addRawStream,
  consumeRaw,
  Counter,
  envelopeLike,
  leftPending,
  now,
  progressTo,
  runBounded,
  Unconfirmed,
  unconfirmedOf,
  type Scope,
  type UnconfirmedAcks,
} from "./context.js";

export interface DmThroughputOptions {
  /** DMs per side, measured (split over `rounds`). */
  messages: number;
  /** Unmeasured DMs per side first. */
  warmup: number;
  /** Publishes in flight at most. */
  inflight: number;
  /** Alternating rounds (raw, Cotal, Cotal, raw, …) so drift hits both. */
  rounds: number;
}

export interface DmThroughputResult {
  /** msg/s, received and acked. */
  cotal: number;
  raw: number;
  /** Raw client acking with ackAck() (a confirmed ack, as Cotal's Delivery.ack() does). */
  rawAckAck: number;
  /** CPU per DM over the measured rounds, µs (bench/cpu.ts): Cotal beside raw acking with ack(). */
  cpu: CpuPerMessage;
  /** The same, beside the raw side acking with ackAck(). */
  cpuAckAck: CpuPerMessage;
  /** Deliveries whose id had been seen before (should be 0: nothing is redelivered here). */
  duplicates: number;
  /** Per side: DMs sent (warm-up included), received once each, repeats, left on the recipient's durable. */
  tallies: { cotal: Tally; raw: Tally; rawAckAck: Tally };
  /** Confirmed acks whose confirmation failed (counted as handled; see Unconfirmed). */
  unconfirmed: UnconfirmedAcks;
}

const TEXT = "bench: a short direct message of typical size for an agent";

interface Side {
  /** Send `n` DMs; resolves with the seconds until all were received and acked. */
  round(n: number): Promise<number>;
  /** The side's counts, once its recipient's durable settled. */
  tally(): Promise<Tally>;
  /** Acks that were sent but not confirmed. */
  unconfirmed: Unconfirmed;
}

export async function dmThroughput(parent: Scope, opts: DmThroughputOptions): Promise<DmThroughputResult> {
  const scope = parent.child();
  try {
    const sides = {
      cotal: await cotalSide(scope, opts.inflight),
      raw: await rawSide(scope, opts.inflight, "ack"),
      rawAckAck: await rawSide(scope, opts.inflight, "ackAck"),
    };
    const names = ["raw", "cotal", "rawAckAck"] as const;
    for (const s of names) await sides[s].round(opts.warmup);
    const totals = { cotal: { n: 0, s: 0 }, raw: { n: 0, s: 0 }, rawAckAck: { n: 0, s: 0 } };
    const cpu = new CpuAccount<(typeof names)[number]>(() => scope.pids, "throughput");
    const perRound = Math.ceil(opts.messages / opts.rounds);
    for (let r = 0; r < opts.rounds; r++) {
      const n = Math.min(perRound, opts.messages - r * perRound);
      const order = r % 2 === 0 ? names : ([...names].reverse() as (typeof names)[number][]);
      for (const s of order) {
        totals[s].s += await cpu.measure(s, n, () => sides[s].round(n));
        totals[s].n += n;
      }
    }
    const tallies = { cotal: await sides.cotal.tally(), raw: await sides.raw.tally(), rawAckAck: await sides.rawAckAck.tally() };
    return {
      unconfirmed: unconfirmedOf({ cotal: sides.cotal.unconfirmed, "raw+ackAck": sides.rawAckAck.unconfirmed }),
      cotal: totals.cotal.n / totals.cotal.s,
      raw: totals.raw.n / totals.raw.s,
      rawAckAck: totals.rawAckAck.n / totals.rawAckAck.s,
      cpu: cpu.pair("cotal", "raw"),
      cpuAckAck: cpu.pair("cotal", "rawAckAck"),
      duplicates: names.reduce((sum, s) => sum + tallies[s].duplicates, 0),
      tallies,
    };
  } finally {
    await scope.close();
  }
}

async function cotalSide(scope: Scope, inflight: number): Promise<Side> {
  const { ep: sender } = await scope.joined("tp_sender");
  const { ep: recipient, reply } = await scope.joined("tp_recipient");
  const admin = await scope.raw("bench-tp-admin");
  const acked = new Counter();
  const arrivals = new Arrivals();
  const unconfirmed = new Unconfirmed();
  let sent = 0;
  void (async () => {
    for await (const d of recipient.deliveries) {
      arrivals.add(d.message.id);
      d.ack().then(
        () => acked.add(),
        (err: unknown) => {
          unconfirmed.note(err);
          acked.add();
        },
      );
    }
  })();
  return {
    async round(n) {
      const target = acked.value + n;
      const t0 = now();
      sent += n;
      await runBounded(n, inflight, () => sender.dm("tp_recipient", TEXT, { id: randomUUID() }));
      await progressTo(acked, target, "Cotal: DMs received and acked (a running count)");
      return (now() - t0) / 1000;
    },
    tally: async () => arrivals.tally(sent, await leftPending(admin.jsm, `DM_${scope.space}`, [reply.dm], unconfirmed.settleMs)),
    unconfirmed,
  };
}

async function rawSide(scope: Scope, inflight: number, ackMode: "ack" | "ackAck"): Promise<Side> {
  const tag = ackMode === "ack" ? "tp" : "tpaa";
  const pub = await scope.raw(`bench-${tag}-raw-pub`);
  const sub = await scope.raw(`bench-${tag}-raw-sub`);
  const stream = `BENCH_RAW_${tag.toUpperCase()}`;
  const root = `raw${tag}.${scope.space}.inst`;
  const durable = `raw_${tag}_recipient`;
  await addRawStream(pub, scope.space, stream, [`${root}.>`]);
  await addRawConsumer(pub.jsm, stream, durable, `${root}.local.tp_recipient.>`);
  const acked = new Counter();
  const arrivals = new Arrivals();
  const unconfirmed = new Unconfirmed();
  let sent = 0;
  await consumeRaw(scope, sub, stream, durable, (m) => {
    arrivals.add(m.headers?.get("Nats-Msg-Id") ?? "");
    if (ackMode === "ack") {
      m.ack();
      acked.add();
    } else {
      m.ackAck().then(
        () => acked.add(),
        (err: unknown) => {
          unconfirmed.note(err);
          acked.add();
        },
      );
    }
  });
  const subject = `${root}.local.tp_recipient.local.tp_sender`;
  return {
    async round(n) {
      const target = acked.value + n;
      const t0 = now();
      sent += n;
      await runBounded(n, inflight, () => {
        const id = randomUUID();
        return pub.js.publish(subject, envelopeLike(scope.space, "tp_sender", { to: "local.tp_recipient" }, id, TEXT), { msgID: id });
      });
      await progressTo(acked, target, `raw (${ackMode}): DMs received and acked (a running count)`);
      // A plain ack() is fire-and-forget: count the run as done once the acks reached the server.
      if (ackMode === "ack") await sub.nc.flush();
      return (now() - t0) / 1000;
    },
    tally: async () => arrivals.tally(sent, await leftPending(pub.jsm, stream, [durable], unconfirmed.settleMs)),
    unconfirmed,
  };
}

// DM publish→received latency, sequential: send one, wait until the recipient holds it and the
// broker confirmed its ack, repeat. Cotal: Endpoint.dm → recipient's `deliveries`, Delivery.ack().
// Raw: js.publish with msgID → a durable pull consumer's consume(), ackAck(). Both sides confirm
// the ack before the next sample, so each starts on a quiet server: with `sync_interval: always` a
// fire-and-forget ack's write still runs when the next publish arrives, and made raw samples
// slower than Cotal's (p50 3.9 vs 2.1 ms in one run; 1.5 vs 1.65 ms with the ack confirmed).
import { randomUUID } from "node:crypto";
import type { JsMsg } from "@nats-io/jetstream";
import type { Delivery } from "../broker/index.js";
import { Arrivals, type Tally } from "./checks.js";
import { CpuAccount, type CpuPerMessage } from "./cpu.js";
import {
  addRawConsumer,
  addRawStream,
  consumeRaw,
  envelopeLike,
  leftPending,
  Mailbox,
  now,
  STALL_MS,
  Unconfirmed,
  unconfirmedOf,
  withTimeout,
  type Scope,
  type UnconfirmedAcks,
} from "./context.js";
import { summarize, type Summary } from "./stats.js";

export interface DmLatencyOptions {
  /** Measured samples per side. */
  samples: number;
  /** Unmeasured round trips per side first. */
  warmup: number;
  /** Samples are taken in this many alternating blocks (raw, Cotal, Cotal, raw, …) so drift hits both. */
  blocks: number;
}

export interface DmLatencyResult {
  cotal: Summary;
  raw: Summary;
  /** CPU per DM of each side over its measured blocks, µs (bench/cpu.ts). */
  cpu: CpuPerMessage;
  /** Per side: DMs sent, received (once each), repeats, left on the recipient's durable. */
  tallies: { cotal: Tally; raw: Tally };
  /** Acks whose confirmation failed, per side (counted as handled; see Unconfirmed). */
  unconfirmed: UnconfirmedAcks;
}

/** One DM; only one that never arrives hits it (a loaded machine is slow, not stuck). */
const SAMPLE_TIMEOUT_MS = STALL_MS;
const TEXT = "bench: a short direct message of typical size for an agent";

export async function dmLatency(parent: Scope, opts: DmLatencyOptions): Promise<DmLatencyResult> {
  const scope = parent.child();
  try {
    const cotal = await cotalSide(scope);
    const raw = await rawSide(scope);
    for (let i = 0; i < opts.warmup; i++) {
      await cotal.sample();
      await raw.sample();
    }
    const samples = { cotal: [] as number[], raw: [] as number[] };
    const cpu = new CpuAccount<"cotal" | "raw">(() => scope.pids, "latency");
    const perBlock = Math.ceil(opts.samples / opts.blocks);
    for (let b = 0; b < opts.blocks; b++) {
      const n = Math.min(perBlock, opts.samples - b * perBlock);
      const order = b % 2 === 0 ? (["raw", "cotal"] as const) : (["cotal", "raw"] as const);
      for (const side of order) {
        const run = side === "cotal" ? cotal : raw;
        await cpu.measure(side, n, async () => {
          for (let i = 0; i < n; i++) samples[side].push(await run.sample());
        });
      }
    }
    return {
      cotal: summarize(samples.cotal),
      raw: summarize(samples.raw),
      cpu: cpu.pair("cotal", "raw"),
      tallies: { cotal: await cotal.tally(), raw: await raw.tally() },
      unconfirmed: unconfirmedOf({ cotal: cotal.unconfirmed, raw: raw.unconfirmed }),
    };
  } finally {
    await scope.close();
  }
}

interface Side {
  /** One DM: ms from the send call to the recipient holding it (the ack completes before return). */
  sample(): Promise<number>;
  /** The side's counts, once its recipient's durable settled. */
  tally(): Promise<Tally>;
  /** Acks that were sent but not confirmed. */
  unconfirmed: Unconfirmed;
}

/**
 * Read `next` until the message `id` arrives; returns when it did. A repeat of an earlier
 * sample's message is counted in `arrivals` and acked on the way; a message never sent fails.
 */
async function arrival<M>(next: () => Promise<M>, idOf: (m: M) => string, ack: (m: M) => Promise<unknown>, arrivals: Arrivals, id: string) {
  for (;;) {
    const m = await next();
    const t = now();
    const seen = idOf(m);
    const first = arrivals.add(seen);
    if (seen === id) return { t, m };
    if (first) throw new Error(`latency run: expected message ${id}, received ${seen}, which was never sent`);
    await ack(m);
  }
}

async function cotalSide(scope: Scope): Promise<Side> {
  const { ep: sender } = await scope.joined("lat_sender");
  const { ep: recipient, reply } = await scope.joined("lat_recipient");
  const inbox = recipient.deliveries[Symbol.asyncIterator]();
  const admin = await scope.raw("bench-lat-admin");
  const arrivals = new Arrivals();
  const unconfirmed = new Unconfirmed();
  const ack = (d: Delivery) => d.ack().catch((err: unknown) => unconfirmed.note(err));
  let sent = 0;
  const next = async (): Promise<Delivery> => {
    const r = await inbox.next();
    if (r.done) throw new Error("recipient's deliveries ended during the latency run");
    return r.value;
  };
  return {
    async sample() {
      const id = randomUUID();
      sent += 1;
      const t0 = now();
      const got = arrival(next, (d) => d.message.id, ack, arrivals, id);
      const [{ t, m }] = await withTimeout(Promise.all([got, sender.dm("lat_recipient", TEXT, { id })]), SAMPLE_TIMEOUT_MS, `Cotal DM ${id} to arrive`);
      await ack(m);
      return t - t0;
    },
    tally: async () => arrivals.tally(sent, await leftPending(admin.jsm, `DM_${scope.space}`, [reply.dm], unconfirmed.settleMs)),
    unconfirmed,
  };
}

async function rawSide(scope: Scope): Promise<Side> {
  const pub = await scope.raw("bench-lat-raw-pub");
  const sub = await scope.raw("bench-lat-raw-sub");
  const stream = "BENCH_RAW_LAT";
  const root = `raw.${scope.space}.inst`;
  await addRawStream(pub, scope.space, stream, [`${root}.>`]);
  await addRawConsumer(pub.jsm, stream, "raw_lat_recipient", `${root}.local.lat_recipient.>`);
  const box = new Mailbox<JsMsg>();
  await consumeRaw(scope, sub, stream, "raw_lat_recipient", (m) => box.push(m));
  const subject = `${root}.local.lat_recipient.local.lat_sender`;
  const arrivals = new Arrivals();
  const unconfirmed = new Unconfirmed();
  const ack = (m: JsMsg) => m.ackAck().catch((err: unknown) => unconfirmed.note(err));
  let sent = 0;
  return {
    async sample() {
      const id = randomUUID();
      sent += 1;
      const payload = envelopeLike(scope.space, "lat_sender", { to: "local.lat_recipient" }, id, TEXT);
      const t0 = now();
      const got = arrival(
        () => box.next(),
        (m) => m.headers?.get("Nats-Msg-Id") ?? "",
        ack,
        arrivals,
        id,
      );
      const [{ t, m }] = await withTimeout(Promise.all([got, pub.js.publish(subject, payload, { msgID: id })]), SAMPLE_TIMEOUT_MS, `raw DM ${id} to arrive`);
      await ack(m);
      return t - t0;
    },
    tally: async () => {
      await sub.nc.flush();
      return arrivals.tally(sent, await leftPending(pub.jsm, stream, ["raw_lat_recipient"], unconfirmed.settleMs));
    },
    unconfirmed,
  };
}

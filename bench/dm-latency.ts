// DM publish→received latency, sequential: send one, wait until the recipient holds it and has
// acked it, repeat. Cotal: Endpoint.dm → recipient's `deliveries`. Raw: js.publish with msgID →
// a durable pull consumer's consume().
import { randomUUID } from "node:crypto";
import type { JsMsg } from "@nats-io/jetstream";
import type { Delivery } from "../broker/index.js";
import { addRawConsumer, addRawStream, assertDrained, consumeRaw, envelopeLike, Mailbox, now, withTimeout, type Scope } from "./context.js";
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
}

const SAMPLE_TIMEOUT_MS = 10_000;
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
    const perBlock = Math.ceil(opts.samples / opts.blocks);
    for (let b = 0; b < opts.blocks; b++) {
      const n = Math.min(perBlock, opts.samples - b * perBlock);
      const order = b % 2 === 0 ? (["raw", "cotal"] as const) : (["cotal", "raw"] as const);
      for (const side of order) {
        const run = side === "cotal" ? cotal : raw;
        for (let i = 0; i < n; i++) samples[side].push(await run.sample());
      }
    }
    await cotal.drained();
    await raw.drained();
    return { cotal: summarize(samples.cotal), raw: summarize(samples.raw) };
  } finally {
    await scope.close();
  }
}

interface Side {
  /** One DM: ms from the send call to the recipient holding it (the ack completes before return). */
  sample(): Promise<number>;
  /** Fails unless the recipient's durable has nothing pending or unacked. */
  drained(): Promise<void>;
}

async function cotalSide(scope: Scope): Promise<Side> {
  const { ep: sender } = await scope.joined("lat_sender");
  const { ep: recipient, reply } = await scope.joined("lat_recipient");
  const inbox = recipient.deliveries[Symbol.asyncIterator]();
  const admin = await scope.raw("bench-lat-admin");
  return {
    async sample() {
      const id = randomUUID();
      const t0 = now();
      let t1 = 0;
      const got = inbox.next().then((r) => {
        t1 = now();
        return r;
      });
      const [r] = await withTimeout(Promise.all([got, sender.dm("lat_recipient", TEXT, { id })]), SAMPLE_TIMEOUT_MS, `Cotal DM ${id} to arrive`);
      if (r.done) throw new Error("recipient's deliveries ended during the latency run");
      const d: Delivery = r.value;
      if (d.message.id !== id) throw new Error(`Cotal latency: expected DM ${id}, received ${d.message.id} (kind ${d.kind})`);
      await d.ack();
      return t1 - t0;
    },
    drained: () => assertDrained(admin.jsm, `DM_${scope.space}`, reply.dm, "Cotal DM latency"),
  };
}

async function rawSide(scope: Scope): Promise<Side> {
  const pub = await scope.raw("bench-lat-raw-pub");
  const sub = await scope.raw("bench-lat-raw-sub");
  const stream = "BENCH_RAW_LAT";
  const root = `raw.${scope.space}.inst`;
  await addRawStream(pub.jsm, scope.space, stream, [`${root}.>`]);
  await addRawConsumer(pub.jsm, stream, "raw_lat_recipient", `${root}.local.lat_recipient.>`);
  const box = new Mailbox<JsMsg>();
  await consumeRaw(scope, sub, stream, "raw_lat_recipient", (m) => box.push(m));
  const subject = `${root}.local.lat_recipient.local.lat_sender`;
  return {
    async sample() {
      const id = randomUUID();
      const payload = envelopeLike(scope.space, "lat_sender", { to: "local.lat_recipient" }, id, TEXT);
      const t0 = now();
      let t1 = 0;
      const got = box.next().then((m) => {
        t1 = now();
        return m;
      });
      const [m] = await withTimeout(Promise.all([got, pub.js.publish(subject, payload, { msgID: id })]), SAMPLE_TIMEOUT_MS, `raw DM ${id} to arrive`);
      const seen = m.headers?.get("Nats-Msg-Id");
      if (seen !== id) throw new Error(`raw latency: expected DM ${id}, received ${seen}`);
      m.ack();
      return t1 - t0;
    },
    drained: async () => {
      await sub.nc.flush();
      await assertDrained(pub.jsm, stream, "raw_lat_recipient", "raw DM latency");
    },
  };
}

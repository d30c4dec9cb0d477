// Sustained DM throughput: N DMs with at most `inflight` publishes outstanding, timed until the
// recipient has received and acked every one. Cotal: Endpoint.dm → `deliveries` + Delivery.ack().
// Raw: js.publish with msgID → durable consume + ack(); and, to attribute the difference, the
// raw client acking with ackAck() the way Cotal's Delivery.ack() does.
import { randomUUID } from "node:crypto";
import { addRawConsumer, addRawStream, assertDrained, consumeRaw, Counter, envelopeLike, now, runBounded, withTimeout, type Scope } from "./context.js";

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
  /** Deliveries whose id had been seen before (should be 0: nothing is redelivered here). */
  duplicates: number;
}

const TEXT = "bench: a short direct message of typical size for an agent";
const ROUND_TIMEOUT_MS = 120_000;

interface Side {
  /** Send `n` DMs; resolves with the seconds until all were received and acked. */
  round(n: number): Promise<number>;
  drained(): Promise<void>;
  duplicates(): number;
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
    const perRound = Math.ceil(opts.messages / opts.rounds);
    for (let r = 0; r < opts.rounds; r++) {
      const n = Math.min(perRound, opts.messages - r * perRound);
      const order = r % 2 === 0 ? names : ([...names].reverse() as (typeof names)[number][]);
      for (const s of order) {
        totals[s].s += await sides[s].round(n);
        totals[s].n += n;
      }
    }
    for (const s of names) await sides[s].drained();
    return {
      cotal: totals.cotal.n / totals.cotal.s,
      raw: totals.raw.n / totals.raw.s,
      rawAckAck: totals.rawAckAck.n / totals.rawAckAck.s,
      duplicates: names.reduce((sum, s) => sum + sides[s].duplicates(), 0),
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
  const seen = new Set<string>();
  let duplicates = 0;
  let failure: unknown;
  void (async () => {
    for await (const d of recipient.deliveries) {
      if (seen.has(d.message.id)) duplicates += 1;
      seen.add(d.message.id);
      d.ack().then(
        () => acked.add(),
        (err: unknown) => (failure ??= err),
      );
    }
  })();
  return {
    async round(n) {
      const target = acked.value + n;
      const t0 = now();
      await runBounded(n, inflight, () => sender.dm("tp_recipient", TEXT, { id: randomUUID() }));
      await withTimeout(acked.reach(target), ROUND_TIMEOUT_MS, `Cotal: ${n} DMs received and acked (acked ${acked.value - (target - n)})`);
      const seconds = (now() - t0) / 1000;
      if (failure) throw new Error("Cotal throughput: an ack failed", { cause: failure });
      return seconds;
    },
    drained: () => assertDrained(admin.jsm, `DM_${scope.space}`, reply.dm, "Cotal DM throughput"),
    duplicates: () => duplicates,
  };
}

async function rawSide(scope: Scope, inflight: number, ackMode: "ack" | "ackAck"): Promise<Side> {
  const tag = ackMode === "ack" ? "tp" : "tpaa";
  const pub = await scope.raw(`bench-${tag}-raw-pub`);
  const sub = await scope.raw(`bench-${tag}-raw-sub`);
  const stream = `BENCH_RAW_${tag.toUpperCase()}`;
  const root = `raw${tag}.${scope.space}.inst`;
  const durable = `raw_${tag}_recipient`;
  await addRawStream(pub.jsm, scope.space, stream, [`${root}.>`]);
  await addRawConsumer(pub.jsm, stream, durable, `${root}.local.tp_recipient.>`);
  const acked = new Counter();
  const seen = new Set<string>();
  let duplicates = 0;
  let failure: unknown;
  await consumeRaw(scope, sub, stream, durable, (m) => {
    const id = m.headers?.get("Nats-Msg-Id") ?? "";
    if (seen.has(id)) duplicates += 1;
    seen.add(id);
    if (ackMode === "ack") {
      m.ack();
      acked.add();
    } else {
      m.ackAck().then(
        () => acked.add(),
        (err: unknown) => (failure ??= err),
      );
    }
  });
  const subject = `${root}.local.tp_recipient.local.tp_sender`;
  return {
    async round(n) {
      const target = acked.value + n;
      const t0 = now();
      await runBounded(n, inflight, () => {
        const id = randomUUID();
        return pub.js.publish(subject, envelopeLike(scope.space, "tp_sender", { to: "local.tp_recipient" }, id, TEXT), { msgID: id });
      });
      await withTimeout(acked.reach(target), ROUND_TIMEOUT_MS, `raw (${ackMode}): ${n} DMs received and acked`);
      // A plain ack() is fire-and-forget: count the run as done once the acks reached the server.
      if (ackMode === "ack") await sub.nc.flush();
      const seconds = (now() - t0) / 1000;
      if (failure) throw new Error(`raw throughput (${ackMode}): an ack failed`, { cause: failure });
      return seconds;
    },
    drained: () => assertDrained(pub.jsm, stream, durable, `raw DM throughput (${ackMode})`),
    duplicates: () => duplicates,
  };
}

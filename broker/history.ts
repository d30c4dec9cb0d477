import { DeliverPolicy, type JetStreamClient } from "@nats-io/jetstream";
import { filters, names, type CotalMessage, type Principal } from "../schemas/index.js";
import type { Logger } from "./log.js";
import { verifyEnvelope } from "./verify.js";

/** One stored channel post. */
export interface HistoryItem {
  message: CotalMessage;
  from: Principal;
  channel: string;
  seq: number;
  /** Server time it was stored, Unix ms. */
  storedAt: number;
}

/** Which stored posts to read. */
export interface HistoryQuery {
  /** Only posts stored at or after this time, Unix ms. */
  sinceMs?: number;
  /** Only posts at or after this stream sequence. */
  afterSeq?: number;
  /** Only posts before this stream sequence. */
  beforeSeq?: number;
  /** Keep the newest N. */
  limit?: number;
}

/**
 * Read a channel's stored posts since `sinceMs` (Unix ms) with a short-lived ordered consumer,
 * oldest first. `limit` keeps the newest N. `beforeSeq` stops at a stream sequence (exclusive).
 * Posts whose envelope disagrees with their subject are dropped with a log line.
 */
export async function readHistory(
  js: JetStreamClient,
  space: string,
  channel: string,
  opts: HistoryQuery,
  log: Logger,
): Promise<HistoryItem[]> {
  const consumer = await js.consumers.get(names.chatStream(space), {
    filter_subjects: filters.channel(space, channel),
    ...(opts.afterSeq !== undefined
      ? { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: opts.afterSeq }
      : opts.sinceMs !== undefined
        ? { deliver_policy: DeliverPolicy.StartTime, opt_start_time: new Date(opts.sinceMs).toISOString() }
        : { deliver_policy: DeliverPolicy.All }),
  });
  const out: HistoryItem[] = [];
  try {
    const info = await consumer.info(true);
    let pending = info.num_pending;
    if (pending === 0) return out;
    const iter = await consumer.consume({ max_messages: 500 });
    for await (const m of iter) {
      pending = m.info.pending;
      if (opts.beforeSeq !== undefined && m.seq >= opts.beforeSeq) break;
      const v = verifyEnvelope(m.subject, m.data, log);
      if (v && v.kind === "channel" && (opts.sinceMs === undefined || m.info.timestampNanos / 1e6 >= opts.sinceMs)) {
        out.push({ message: v.message, from: v.from, channel: v.channel!, seq: m.seq, storedAt: Math.floor(m.info.timestampNanos / 1e6) });
      }
      if (pending === 0) break;
    }
    iter.stop();
  } finally {
    await consumer.delete().catch(() => undefined);
  }
  return opts.limit !== undefined ? out.slice(-opts.limit) : out;
}

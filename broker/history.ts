import { AckPolicy, DeliverPolicy, type ConsumerConfig, type JetStreamClient, type JetStreamManager, type JsMsg } from "@nats-io/jetstream";
import { filters, names, type CotalMessage, type HistoryArgs, type HistoryItem, type HistoryPage, type Principal } from "../schemas/index.js";
import { isPullStatus } from "./js-errors.js";
import type { Logger } from "./log.js";
import { verifyEnvelope } from "./verify.js";

/** One stored channel post, and a page of them (the `history` command's reply, schemas/control-commands.ts). */
export type { HistoryItem, HistoryPage } from "../schemas/index.js";

/** Which stored posts to read. */
export interface HistoryQuery {
  /** Only posts stored at or after this time, Unix ms. */
  sinceMs?: number;
  /** Only posts at or after this stream sequence. */
  afterSeq?: number;
  /** Only posts before this stream sequence. */
  beforeSeq?: number;
  /** Keep the newest N (of those the other bounds select). */
  limit?: number;
}

/** What one page may hold. */
export interface HistoryPageBounds {
  /** Most encoded UTF-8 bytes of the whole page (`JSON.stringify(page)`). */
  maxBytes: number;
  /** Most items in the page. */
  maxItems: number;
}

/** Bytes of a page's JSON besides its items: `{"items":[],"more":true,"nextAfterSeq":<seq>}`. */
const PAGE_OVERHEAD_BYTES = 64;
/** A pull that finds nothing more waits at most this long (a post may vanish after it was counted). */
const FETCH_EXPIRES_MS = 2_000;
/** Reading a post bigger than the page's byte budget (only to step past it) may pull this much. */
const OVERSIZE_PULL_BYTES = 1024 * 1024 + 64 * 1024;

const enc = new TextEncoder();

/** Encoded UTF-8 size of a value's JSON. */
export function jsonBytes(value: unknown): number {
  return enc.encode(JSON.stringify(value)).byteLength;
}

/**
 * Read one page of a channel's stored posts, oldest first, holding at most one page (plus one
 * pull of at most `bounds.maxBytes`) in memory: posts are pulled from a short-lived ephemeral
 * consumer with `max_bytes` set to what the page still has room for, so the server never sends
 * more than the page needs. `limit: N` (the newest N) first finds its start sequence by counting
 * (a consumer's `num_pending` from a candidate start), never by reading the posts before it.
 * Posts whose envelope disagrees with their subject are dropped with a log line; a post too
 * big for any page is skipped with a warning.
 */
export async function readHistoryPage(
  js: JetStreamClient,
  space: string,
  channel: string,
  q: HistoryQuery,
  bounds: HistoryPageBounds,
  log: Logger,
): Promise<HistoryPage> {
  const jsm = await js.jetstreamManager(false);
  const stream = names.streamOfChannel(space, channel);
  const filter = filters.channel(space, channel);
  let start: Start = q.afterSeq !== undefined ? { seq: q.afterSeq } : q.sinceMs !== undefined ? { timeMs: q.sinceMs } : { seq: 1 };
  if (q.limit !== undefined) start = await newestStart(jsm, stream, filter, start, q.limit, q.beforeSeq);
  if (q.beforeSeq !== undefined && "seq" in start && start.seq >= q.beforeSeq) return { items: [], more: false };

  const info = await jsm.consumers.add(stream, ephemeral(filter, start));
  try {
    if (info.num_pending === 0) return { items: [], more: false };
    const consumer = await js.consumers.get(stream, info.name);
    const budget = bounds.maxBytes - PAGE_OVERHEAD_BYTES;
    const items: HistoryItem[] = [];
    let bytes = 0;
    let cursor: number | undefined; // first sequence not yet looked at
    let oversizePull = false;
    for (;;) {
      let got = 0;
      let end: { more: boolean } | undefined;
      const room = oversizePull ? OVERSIZE_PULL_BYTES : Math.max(1, budget - bytes);
      oversizePull = false;
      try {
        const iter = await consumer.fetch({ max_bytes: room, expires: FETCH_EXPIRES_MS });
        for await (const m of iter) {
          got += 1;
          if (q.beforeSeq !== undefined && m.seq >= q.beforeSeq) {
            end = { more: false };
            break;
          }
          const item = toItem(m, q.sinceMs, log);
          if (item) {
            const size = jsonBytes(item) + 1; // and its comma
            if (bytes + size > budget) {
              if (items.length > 0) {
                cursor = m.seq;
                end = { more: true };
                break;
              }
              log.warn({ channel, seq: m.seq, bytes: size, pageBytes: bounds.maxBytes }, "skipped a stored post too big for a history page");
            } else {
              items.push(item);
              bytes += size;
            }
          }
          cursor = m.seq + 1;
          if (m.info.pending === 0) end = { more: false };
          else if (items.length >= bounds.maxItems) end = { more: true };
          if (end) break;
        }
      } catch (err) {
        // 409: the next post does not fit in what this pull had room for.
        if (!isPullStatus(err, 409)) throw err;
        if (got === 0 && items.length === 0) {
          if (room >= OVERSIZE_PULL_BYTES) throw err;
          oversizePull = true; // a post bigger than a whole page: pull it only to step past it
          continue;
        }
        end = { more: true };
      }
      if (!end && got === 0) end = { more: false }; // the pull expired: nothing left
      if (end) {
        return end.more && cursor !== undefined ? { items, more: true, nextAfterSeq: cursor } : { items, more: false };
      }
    }
  } finally {
    await jsm.consumers
      .delete(stream, info.name)
      .catch((err) => log.warn({ err, consumer: info.name }, "could not delete a history consumer; it expires by itself"));
  }
}

/** Where a read starts: a stream sequence or a store time. */
type Start = { seq: number } | { timeMs: number };

/** A short-lived, unacknowledged, in-memory consumer that removes itself if forgotten. */
function ephemeral(filter: string, start: Start): Partial<ConsumerConfig> {
  return {
    ack_policy: AckPolicy.None,
    filter_subject: filter,
    mem_storage: true,
    num_replicas: 1,
    inactive_threshold: 30_000 * 1_000_000,
    ...("seq" in start
      ? start.seq <= 1
        ? { deliver_policy: DeliverPolicy.All }
        : { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: start.seq }
      : { deliver_policy: DeliverPolicy.StartTime, opt_start_time: new Date(start.timeMs).toISOString() }),
  };
}

/** Posts matching `filter` from `start` on, as the server counts them (nothing is read). */
async function countFrom(jsm: JetStreamManager, stream: string, filter: string, start: Start): Promise<number> {
  const info = await jsm.consumers.add(stream, ephemeral(filter, start));
  await jsm.consumers.delete(stream, info.name).catch(() => undefined);
  return info.num_pending;
}

/**
 * The start of the newest `limit` posts at or after `lower` and before `beforeSeq` (default:
 * the end of the stream): the largest sequence `s` with count[s, end) ≥ limit, found by
 * galloping back from the end and then bisecting, each step one count.
 */
async function newestStart(jsm: JetStreamManager, stream: string, filter: string, lower: Start, limit: number, beforeSeq: number | undefined): Promise<Start> {
  const state = (await jsm.streams.info(stream)).state;
  const end = Math.min(beforeSeq ?? Infinity, state.last_seq + 1);
  const tail = end <= state.last_seq ? await countFrom(jsm, stream, filter, { seq: end }) : 0;
  const count = async (s: number) => (await countFrom(jsm, stream, filter, { seq: s })) - tail;
  if ((await countFrom(jsm, stream, filter, lower)) - tail <= limit) return lower;
  const floor = Math.max(state.first_seq, "seq" in lower ? lower.seq : 1);
  // count(s) ≤ end - s, so count(end - limit) ≥ limit means every sequence there matches.
  let good = Math.max(floor, end - limit);
  if ((await count(good)) >= limit) return { seq: good };
  let bad = good; // count(bad) < limit
  for (let step = limit * 2; ; step *= 2) {
    good = Math.max(floor, end - step);
    if (good === floor || (await count(good)) >= limit) break;
    bad = good;
  }
  // count(good) ≥ limit (floor qualifies: the whole range holds more than limit), count(bad) < limit.
  while (bad - good > 1) {
    const mid = Math.floor((good + bad) / 2);
    if ((await count(mid)) >= limit) good = mid;
    else bad = mid;
  }
  return { seq: good };
}

/** A pulled post as a history item; undefined (logged) when its envelope is not trustworthy. */
function toItem(m: JsMsg, sinceMs: number | undefined, log: Logger): HistoryItem | undefined {
  const storedAt = Math.floor(m.info.timestampNanos / 1e6);
  if (sinceMs !== undefined && storedAt < sinceMs) return undefined;
  const v = verifyEnvelope(m.subject, m.data, log);
  if (!v || v.kind !== "channel") return undefined;
  return { message: verifiedName(v.message, v.from), from: v.from, channel: v.channel!, seq: m.seq, storedAt };
}

/**
 * The envelope as it may be shown: `from.name` is the sender's verified actor, and the payload's
 * `from.role` is dropped. Both are claims the sender wrote; the subject proves only who sent it.
 */
export function verifiedName(message: CotalMessage, from: Principal): CotalMessage {
  if (message.from.name === from.actor && message.from.role === undefined) return message;
  const { role: _claimed, ...rest } = message.from;
  return { ...message, from: { ...rest, name: from.actor } };
}

/** Default page bounds: well inside NATS's 1 MiB payload. */
export const HISTORY_PAGE_BOUNDS: HistoryPageBounds = { maxBytes: 768 * 1024, maxItems: 1_000 };

/**
 * A channel's posts, oldest first, collected page by page from `page` (the mesh service's
 * `history` command, which enforces read scope and bounds each page). The first page positions
 * the query; later ones continue after it up to `beforeSeq`. `limit` keeps the newest N.
 */
export async function collectHistory(channel: string, q: HistoryQuery, page: (args: HistoryArgs) => Promise<HistoryPage>): Promise<HistoryItem[]> {
  const out: HistoryItem[] = [];
  let p = await page({ channel, ...q });
  out.push(...p.items);
  while (p.more && p.nextAfterSeq !== undefined) {
    p = await page({ channel, afterSeq: p.nextAfterSeq, ...(q.beforeSeq !== undefined ? { beforeSeq: q.beforeSeq } : {}) });
    out.push(...p.items);
  }
  return q.limit !== undefined ? out.slice(-q.limit) : out;
}

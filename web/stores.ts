import type { JetStreamManager, MsgRequest, StoredMsg } from "@nats-io/jetstream";
import { isNoMessageFound, isStreamNotFound, type Logger } from "../broker/index.js";
import {
  decodeMessage,
  describeIssues,
  filters,
  messageText,
  names,
  parseSubject,
  principalId,
  SeatEvent,
  seatRecordProblem,
  parsePrincipal,
} from "../schemas/index.js";
import type { PendingMail } from "./roster-rows.js";

/**
 * Read-only reads of the space's stores with STREAM.INFO and STREAM.MSG.GET (what an admin
 * credential may do; an observer's is refused by the broker): waiting DMs, the seat log and the
 * managers' heartbeats. Nothing here creates a consumer or writes.
 */

/** The stored message at or after `seq` on `filter`, or null (nats.js types next_by_subj for direct gets only; MSG.GET takes it). */
async function nextOn(jsm: JetStreamManager, stream: string, seq: number, filter: string): Promise<StoredMsg | null> {
  try {
    return await jsm.streams.getMessage(stream, { seq, next_by_subj: filter } as unknown as MsgRequest);
  } catch (err) {
    if (isNoMessageFound(err) || isStreamNotFound(err)) return null;
    throw err;
  }
}

/** Stored posts per channel, from the CHAT_ stream's per-subject counts (its INFO, which changes nothing). */
export async function postCounts(jsm: JetStreamManager, space: string): Promise<Map<string, number>> {
  const info = await jsm.streams.info(names.chatStream(space), { subjects_filter: filters.kind(space, "chat") });
  const out = new Map<string, number>();
  for (const [subject, n] of Object.entries(info.state.subjects ?? {})) {
    const p = parseSubject(subject);
    if (p.kind === "chat") out.set(p.channel, (out.get(p.channel) ?? 0) + n);
  }
  return out;
}

/**
 * DMs waiting per recipient: DM_ is a work queue, so a stored DM is one not yet acknowledged
 * (delivered or not). Counts come from the stream's per-subject state; the oldest per recipient
 * from one message get each.
 */
export async function readPending(jsm: JetStreamManager, space: string): Promise<Map<string, PendingMail>> {
  const stream = names.dmStream(space);
  const out = new Map<string, PendingMail>();
  let subjects: Record<string, number>;
  try {
    subjects = (await jsm.streams.info(stream, { subjects_filter: filters.kind(space, "inst") })).state.subjects ?? {};
  } catch (err) {
    if (isStreamNotFound(err)) return out;
    throw err;
  }
  for (const [subject, n] of Object.entries(subjects)) {
    const p = parseSubject(subject);
    if (p.kind !== "inst") continue;
    const id = principalId(p.to);
    out.set(id, { count: (out.get(id)?.count ?? 0) + n });
  }
  for (const [id, mail] of out) {
    const first = await nextOn(jsm, stream, 1, filters.dmInbox(space, parsePrincipal(id)));
    if (first) mail.oldestAt = first.time.getTime();
  }
  return out;
}

/** One waiting DM, its body included: only ever read for an admin credential. */
export interface WaitingDm {
  seq: number;
  from: string;
  /** Who really sent it for `from` (the operator acting for a person). */
  sentBy?: string;
  at: number;
  text: string;
}

/** Up to `limit` of the DMs waiting for `to`, oldest first. */
export async function readWaitingDms(jsm: JetStreamManager, space: string, to: string, limit: number, log: Logger): Promise<WaitingDm[]> {
  const stream = names.dmStream(space);
  const filter = filters.dmInbox(space, parsePrincipal(to));
  const out: WaitingDm[] = [];
  for (let seq = 1; out.length < limit;) {
    const m = await nextOn(jsm, stream, seq, filter);
    if (!m) break;
    seq = m.seq + 1;
    const p = parseSubject(m.subject);
    if (p.kind !== "inst") continue;
    try {
      const msg = decodeMessage(m.data);
      out.push({ seq: m.seq, from: principalId(p.from), ...(msg.sentBy ? { sentBy: msg.sentBy } : {}), at: m.time.getTime(), text: messageText(msg) });
    } catch (err) {
      log.debug({ seq: m.seq, err: (err as Error).message }, "a waiting DM that is not an envelope; left out");
    }
  }
  return out;
}

/**
 * The seat log read forward from a cursor: each record checked like the manager's own reader
 * (a record that is not a seat event, or that its subject does not prove, is skipped).
 */
export class SeatLogCursor {
  private nextSeq = 1;
  constructor(
    private readonly jsm: JetStreamManager,
    private readonly space: string,
    private readonly log: Logger,
  ) {}

  /** The events stored since the last call, in log order. */
  async read(max = 5_000): Promise<SeatEvent[]> {
    const out: SeatEvent[] = [];
    const stream = names.seatsStream(this.space);
    while (out.length < max) {
      const m = await nextOn(this.jsm, stream, this.nextSeq, filters.kind(this.space, "seat"));
      if (!m) break;
      this.nextSeq = m.seq + 1;
      const parsed = SeatEvent.safeParse(safeJson(m.data));
      if (!parsed.success) {
        this.log.debug({ seq: m.seq, problems: describeIssues(parsed.error) }, "seat log record skipped: not a seat event");
        continue;
      }
      // Only a record its subject proves (its seat, and a writer that is the manager it names).
      const subject = parseSubject(m.subject);
      if (subject.kind !== "seat" || seatRecordProblem(subject, parsed.data)) continue;
      out.push(parsed.data);
    }
    return out;
  }
}

/** A manager as its last heartbeat says. */
export interface ManagerBeat {
  instance: string;
  host?: string;
  pid?: number;
  seats?: number;
  maxSeats?: number;
  /** When the heartbeat was stored, Unix ms. */
  at: number;
}

/** The managers' current heartbeats (`cotal_managers_<space>`; entries expire after 10 s of silence). */
export async function readManagers(jsm: JetStreamManager, space: string): Promise<ManagerBeat[]> {
  const bucket = names.managersBucket(space);
  const out = new Map<string, ManagerBeat>();
  for (let seq = 1; ;) {
    const m = await nextOn(jsm, `KV_${bucket}`, seq, `$KV.${bucket}.>`);
    if (!m) break;
    seq = m.seq + 1;
    const instance = m.subject.split(".").pop()!;
    if (m.header?.get("KV-Operation") || m.data.length === 0) {
      out.delete(instance);
      continue;
    }
    const beat = safeJson(m.data) as Partial<Omit<ManagerBeat, "instance" | "at">> | undefined;
    if (!beat || typeof beat !== "object") continue;
    out.set(instance, {
      instance,
      at: m.time.getTime(),
      ...(typeof beat.host === "string" ? { host: beat.host } : {}),
      ...(typeof beat.pid === "number" ? { pid: beat.pid } : {}),
      ...(typeof beat.seats === "number" ? { seats: beat.seats } : {}),
      ...(typeof beat.maxSeats === "number" ? { maxSeats: beat.maxSeats } : {}),
    });
  }
  return [...out.values()];
}

function safeJson(data: Uint8Array): unknown {
  try {
    return JSON.parse(new TextDecoder().decode(data));
  } catch {
    return undefined;
  }
}

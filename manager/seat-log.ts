import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager, type MsgRequest } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { isNoMessageFound, isWrongLastSequence, JS_OPTIONS, type Logger } from "../broker/index.js";
import { describeIssues, filters, names, parsePrincipal, SeatEvent, seatSubject, type SeatEventInput } from "../schemas/index.js";
import { StaleSeatLogError } from "./errors.js";

/** One seat's events in log order, and the stream sequence of its last one (the fence token). */
export interface SeatHistory {
  seat: string;
  events: SeatEvent[];
  lastSeq: number;
}

/**
 * The event-sourced seat log (`SEATS_<space>`, one subject per seat). Every append names the
 * seat's last sequence the writer saw (`Nats-Expected-Last-Subject-Sequence`, 0 = none yet), so
 * JetStream itself refuses a writer with a stale view: a zombie manager cannot rewrite history.
 */
export class SeatLog {
  private constructor(
    private readonly space: string,
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    private readonly log: Logger,
  ) {}

  /** `jsConnection`: the connection JetStream requests go over (see broker jetStreamConnection). */
  static async open(jsConnection: NatsConnection, space: string, log: Logger): Promise<SeatLog> {
    return new SeatLog(space, jetstream(jsConnection, JS_OPTIONS), await jetstreamManager(jsConnection, JS_OPTIONS), log);
  }

  /** Append `event` if the seat's log still ends at `expectedLastSeq`; resolves with the new sequence. */
  async append(event: SeatEventInput, expectedLastSeq: number): Promise<number> {
    const parsed = SeatEvent.parse(event);
    const subject = seatSubject(this.space, parsePrincipal(parsed.seat));
    try {
      const ack = await this.js.publish(subject, JSON.stringify(parsed), { expect: { lastSubjectSequence: expectedLastSeq } });
      return ack.seq;
    } catch (err) {
      if (isWrongLastSequence(err)) throw new StaleSeatLogError(parsed.seat, expectedLastSeq, err);
      throw err;
    }
  }

  /** Every seat's history, replayed from the start of the log (malformed records are skipped, logged). */
  async replay(): Promise<Map<string, SeatHistory>> {
    const out = new Map<string, SeatHistory>();
    const stream = names.seatsStream(this.space);
    const all = filters.kind(this.space, "seat");
    for (let seq = 1; ; ) {
      let m;
      try {
        // STREAM.MSG.GET with next_by_subj (nats-server 2.9+): the first message at or after seq,
        // so a gap (a deleted record) does not end the replay. nats.js types it for direct gets only.
        m = await this.jsm.streams.getMessage(stream, { seq, next_by_subj: all } as unknown as MsgRequest);
      } catch (err) {
        if (isNoMessageFound(err)) break;
        throw err;
      }
      if (!m) break;
      seq = m.seq + 1;
      const parsed = SeatEvent.safeParse(safeJson(m.data));
      if (!parsed.success) {
        this.log.warn({ seq: m.seq, subject: m.subject, problems: describeIssues(parsed.error) }, "seat log record skipped: not a seat event");
        continue;
      }
      const h = out.get(parsed.data.seat) ?? { seat: parsed.data.seat, events: [], lastSeq: 0 };
      h.events.push(parsed.data);
      h.lastSeq = m.seq;
      out.set(h.seat, h);
    }
    return out;
  }
}

function safeJson(data: Uint8Array): unknown {
  try {
    return JSON.parse(new TextDecoder().decode(data));
  } catch {
    return undefined;
  }
}

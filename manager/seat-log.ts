import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { isWrongLastSequence, JS_OPTIONS, scanStream, type Logger } from "../broker/index.js";
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
    for await (const { event, seq } of this.events()) {
      const h = out.get(event.seat) ?? { seat: event.seat, events: [], lastSeq: 0 };
      h.events.push(event);
      h.lastSeq = seq;
      out.set(h.seat, h);
    }
    return out;
  }

  /**
   * The log's events in order (of every seat, or of one owner's seats), each checked: a record
   * that is not a seat event, or whose body names another seat than its subject, is skipped and logged.
   */
  async *events(owner?: string): AsyncGenerator<{ event: SeatEvent; seq: number }> {
    const filter = owner === undefined ? filters.kind(this.space, "seat") : filters.seatsOf(this.space, owner);
    for await (const m of scanStream(this.jsm, names.seatsStream(this.space), filter)) {
      const parsed = SeatEvent.safeParse(safeJson(m.data));
      if (!parsed.success) {
        this.log.warn({ seq: m.seq, subject: m.subject, problems: describeIssues(parsed.error) }, "seat log record skipped: not a seat event");
        continue;
      }
      // The subject names the seat (the broker checked who may write it); a body naming another is a forgery.
      if (seatSubject(this.space, parsePrincipal(parsed.data.seat)) !== m.subject) {
        this.log.warn({ seq: m.seq, subject: m.subject, seat: parsed.data.seat }, "seat log record skipped: its seat disagrees with its subject");
        continue;
      }
      yield { event: parsed.data, seq: m.seq };
    }
  }
}

function safeJson(data: Uint8Array): unknown {
  try {
    return JSON.parse(new TextDecoder().decode(data));
  } catch {
    return undefined;
  }
}

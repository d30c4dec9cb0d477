import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { setTimeout as sleep } from "node:timers/promises";
import { isNoResponders, isWrongLastSequence, JS_OPTIONS, scanStream, type Logger } from "../broker/index.js";
import {
  CotalError,
  describeIssues,
  filters,
  names,
  OPERATOR_PRINCIPAL,
  parsePrincipal,
  parseSubject,
  principalId,
  SeatEvent,
  seatRecordProblem,
  seatSubject,
  type Principal,
  type SeatEventInput,
} from "../schemas/index.js";
import { StaleSeatLogError } from "./errors.js";

/** How long an append is tried again while the seat log's stream has no responder, ms. */
const NO_LEADER_RETRY_MS = 30_000;

/** One record of a seat's log and the writer its subject proves (a principal id). */
export interface SeatEntry {
  event: SeatEvent;
  writer: string;
  seq: number;
}

/** One seat's records in log order, and each writer's last sequence on it (a writer's fence token). */
export interface SeatHistory {
  seat: string;
  entries: SeatEntry[];
  /** Per writer (principal id): the stream sequence of its last record on this seat's subject. */
  lastSeqBy: Map<string, number>;
}

/**
 * The event-sourced seat log (`SEATS_<space>`). Each writer appends on its own subject per seat,
 * `…seat.<o>.<a>.<writerOwner>.<writerActor>`, which the broker lets only that writer publish on,
 * so a reader knows who wrote every record and counts only the seat owner's (seat-table.ts). Every
 * append names the writer's last sequence on that subject (`Nats-Expected-Last-Subject-Sequence`,
 * 0 = none yet), so JetStream itself refuses a writer with a stale view: a zombie manager (an old
 * process of the same instance) cannot rewrite history.
 */
export class SeatLog {
  private constructor(
    private readonly space: string,
    private readonly writer: Principal,
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    private readonly log: Logger,
  ) {}

  /**
   * `jsConnection`: the connection JetStream requests go over (see broker jetStreamConnection).
   * `writer`: the principal of the credential that appends (a manager's own, named like its
   * instance; the operator's on open meshes and older mesh hosts).
   */
  static async open(jsConnection: NatsConnection, space: string, log: Logger, writer: Principal = OPERATOR_PRINCIPAL): Promise<SeatLog> {
    return new SeatLog(space, writer, jetstream(jsConnection, JS_OPTIONS), await jetstreamManager(jsConnection, JS_OPTIONS), log);
  }

  /** The principal id this log appends as. */
  get writerId(): string {
    return principalId(this.writer);
  }

  /** Append `event` if this writer's records on the seat still end at `expectedLastSeq`; resolves with the new sequence. */
  async append(event: SeatEventInput, expectedLastSeq: number): Promise<number> {
    const parsed = SeatEvent.parse(event);
    const subject = seatSubject(this.space, parsePrincipal(parsed.seat), this.writer);
    const problem = seatRecordProblem({ seat: parsePrincipal(parsed.seat), from: this.writer }, parsed);
    if (problem)
      throw new CotalError("seat-log-writer", `This seat-log record would not be counted: ${problem}.`, {
        remedy: "Run the manager with --instance set to its credential's name (a manager credential is named like its instance).",
      });
    // No responders: nothing was stored (the stream had no leader reachable, as while a cluster
    // elects one after a node loss), so the same append is tried again for a while. An exit record
    // that failed there left its seat dead for good: never restarted (docs/reliability.md).
    const deadline = Date.now() + NO_LEADER_RETRY_MS;
    for (let wait = 250; ; wait = Math.min(wait * 2, 2_000)) {
      try {
        const ack = await this.js.publish(subject, JSON.stringify(parsed), { expect: { lastSubjectSequence: expectedLastSeq } });
        return ack.seq;
      } catch (err) {
        if (isWrongLastSequence(err)) throw new StaleSeatLogError(parsed.seat, expectedLastSeq, err);
        if (!isNoResponders(err) || Date.now() + wait > deadline) throw err;
        await sleep(wait);
      }
    }
  }

  /** Every seat's history, replayed from the start of the log (records that prove nothing are skipped, logged). */
  async replay(): Promise<Map<string, SeatHistory>> {
    return this.histories(filters.kind(this.space, "seat"));
  }

  /** One seat's history, by every writer. */
  async history(seat: Principal): Promise<SeatHistory | undefined> {
    return (await this.histories(filters.seat(this.space, seat))).get(principalId(seat));
  }

  private async histories(filter: string): Promise<Map<string, SeatHistory>> {
    const out = new Map<string, SeatHistory>();
    for await (const entry of this.entries(filter)) {
      const seat = entry.event.seat;
      const h = out.get(seat) ?? { seat, entries: [], lastSeqBy: new Map<string, number>() };
      h.entries.push(entry);
      h.lastSeqBy.set(entry.writer, entry.seq);
      out.set(seat, h);
    }
    return out;
  }

  /** The log's records of one owner's seats (e.g. the run records, owner `cotal_run`), each checked as in entries(). */
  events(owner: string): AsyncGenerator<SeatEntry> {
    return this.entries(filters.seatsOf(this.space, owner));
  }

  /**
   * The log's records under `filter` in order, each checked: a record that is not a seat event,
   * lies outside the subject grammar (e.g. an older five-token subject, which names no writer), or
   * whose subject does not prove it (seatRecordProblem) is skipped and logged.
   */
  private async *entries(filter: string): AsyncGenerator<SeatEntry> {
    for await (const m of scanStream(this.jsm, names.seatsStream(this.space), filter)) {
      const subject = parseSubject(m.subject);
      if (subject.kind !== "seat") {
        this.log.warn({ seq: m.seq, subject: m.subject }, "seat log record skipped: its subject names no writer");
        continue;
      }
      const parsed = SeatEvent.safeParse(safeJson(m.data));
      if (!parsed.success) {
        this.log.warn({ seq: m.seq, subject: m.subject, problems: describeIssues(parsed.error) }, "seat log record skipped: not a seat event");
        continue;
      }
      const problem = seatRecordProblem(subject, parsed.data);
      if (problem) {
        this.log.warn({ seq: m.seq, subject: m.subject, problem }, "seat log record skipped: its subject does not prove it");
        continue;
      }
      yield { event: parsed.data, writer: principalId(subject.from), seq: m.seq };
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

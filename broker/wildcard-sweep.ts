import type { JetStreamManager, MsgRequest } from "@nats-io/jetstream";
import { names } from "../schemas/index.js";
import { isNoMessageFound } from "./js-errors.js";
import type { Logger } from "./log.js";

/**
 * Removes messages stored under a subject with a wildcard token (`*` or `>`), which no consumer
 * ever takes.
 *
 * Why here and not at the broker: nats-server checks a published subject for wildcards only
 * for clients that connect `pedantic`, which the client chooses, and a publish permission
 * matches a wildcard token in the published subject against the wildcards of its allow rule (an
 * agent allowed `cotal.<s>.inst.*.*.<o>.<a>` may publish to that subject literally). A deny
 * rule cannot name a literal `*` either: it is a wildcard there too. So the streams store such a
 * message, bounded like any (the per-subject backlog, the stream's bytes), and this sweep, in the
 * mesh service (the data account), deletes it by sequence: a purge or a filtered read by that
 * subject would read it as a pattern and touch real mail.
 */
export class WildcardSweep {
  private timer?: NodeJS.Timeout;
  private running = false;

  constructor(
    private readonly jsm: JetStreamManager,
    private readonly space: string,
    private readonly log: Logger,
  ) {}

  /** Sweep now, then every `everyMs` (one sweep at a time). */
  start(everyMs: number): void {
    const tick = () => {
      if (this.running) return;
      this.running = true;
      void this.sweep()
        .catch((err: unknown) => this.log.warn({ err }, "wildcard-subject sweep failed; the next one tries again"))
        .finally(() => (this.running = false));
    };
    tick();
    this.timer = setInterval(tick, everyMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  /** One pass over the space's streams; returns how many messages were removed. */
  async sweep(): Promise<number> {
    let removed = 0;
    for (const stream of [
      names.dmStream(this.space),
      names.taskStream(this.space),
      names.chatStream(this.space),
      names.seatsStream(this.space),
      names.eventsStream(this.space),
    ]) {
      const info = await this.jsm.streams.info(stream, { subjects_filter: ">" });
      for (const [subject, count] of Object.entries(info.state.subjects ?? {})) {
        if (!hasWildcardToken(subject)) continue;
        const n = await this.removeLiteral(stream, subject, count, info.state.first_seq);
        removed += n;
        this.log.warn({ stream, subject, removed: n }, "removed messages stored under a wildcard subject (no consumer takes them)");
      }
    }
    return removed;
  }

  /**
   * Delete the messages stored under exactly `subject`. Reading by `next_by_subj` treats the
   * subject as a pattern, so each message found is checked to carry exactly that subject before
   * it is deleted; real mail matching the pattern is stepped over.
   */
  private async removeLiteral(stream: string, subject: string, count: number, firstSeq: number): Promise<number> {
    let removed = 0;
    for (let seq = firstSeq; removed < count;) {
      let m;
      try {
        // nats-server's MSG.GET takes `next_by_subj` (the first match at or after seq); nats.js types only DIRECT.GET's.
        m = await this.jsm.streams.getMessage(stream, { seq, next_by_subj: subject } as unknown as MsgRequest);
      } catch (err) {
        if (isNoMessageFound(err)) break;
        throw err;
      }
      if (!m) break;
      if (m.subject === subject) {
        await this.jsm.streams.deleteMessage(stream, m.seq, false);
        removed++;
      }
      seq = m.seq + 1;
    }
    return removed;
  }
}

/** A subject token that is a wildcard: no published message should carry one. */
export function hasWildcardToken(subject: string): boolean {
  return subject.split(".").some((t) => t === "*" || t === ">");
}

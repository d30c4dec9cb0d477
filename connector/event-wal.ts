import { closeSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, statSync, unlinkSync, writeSync } from "node:fs";
import path from "node:path";
import { z } from "zod";
import { AgUiFrame } from "../schemas/index.js";
import type { RunState } from "./agui.js";

/** The stream a WAL's acks refer to: every WAL written now names EVENTS_ (docs/SPEC.md §9.4). */
export const WAL_STORE = "EVENTS_";

const State = z.object({ threadId: z.string(), runId: z.string().optional(), openTools: z.array(z.string()) });
const Cursor = z.object({ transcript: z.string().nullable(), offset: z.number().int().min(0) });
/** Lines of a WAL file: one base line, then frames written before publishing, then acks. */
const WalLine = z.discriminatedUnion("t", [
  z.object({
    t: z.literal("base"),
    session: z.string(),
    cursor: Cursor,
    ackedSeq: z.number().int().min(0),
    subjectSeq: z.number().int().min(0),
    epoch: z.number().int().min(0),
    state: State,
    /** The stream whose sequences the acks name; absent in WALs from before the plane had its own stream (CHAT_). */
    store: z.literal(WAL_STORE).optional(),
  }),
  z.object({ t: z.literal("frames"), frames: z.array(AgUiFrame), cursor: Cursor, state: State }),
  z.object({ t: z.literal("ack"), seq: z.number().int().min(1), subjectSeq: z.number().int().min(1) }),
]);
type WalLine = z.infer<typeof WalLine>;

/** Where the recorder stands in the transcript: the file and the byte offset after the last record it mapped. */
export type TranscriptCursor = z.infer<typeof Cursor>;

/** What a WAL holds once read. */
export interface WalSnapshot {
  session: string;
  cursor: TranscriptCursor;
  /** The last frame the broker confirmed, and the stream sequence it was stored at (0: none). */
  ackedSeq: number;
  subjectSeq: number;
  /** The writer incarnation that last wrote here (0: none yet). */
  epoch: number;
  state: RunState;
  /** Frames written but not confirmed, in order. */
  pending: AgUiFrame[];
  /** Lines that could not be read (a write torn by a crash), by byte offset. */
  torn: number[];
  /** WAL_STORE, or undefined for a WAL from before the plane had its own stream (its sequences are CHAT_'s). */
  store?: typeof WAL_STORE;
}

/**
 * The event plane's write-ahead log: one JSONL file per session (`<dir>/<session>.wal`).
 * Frames are appended before they are published and acks after the broker stored them, so a
 * restarted connector resumes at its cursor with nothing lost and nothing sent twice. Each
 * append is one `write`; a line torn by a crash is skipped on read (its records are read again
 * from the transcript, whose cursor only moves with a complete line).
 */
export class EventWal {
  private fd: number;
  private acksSinceBase = 0;

  private constructor(
    readonly dir: string,
    readonly file: string,
    private snap: WalSnapshot,
  ) {
    this.fd = openSync(file, "a", 0o600);
  }

  /** The WAL file of `session` in `dir`. Session ids are Claude's UUIDs; anything else is hashed out of the path. */
  static fileOf(dir: string, session: string): string {
    return path.join(dir, `${session.replace(/[^A-Za-z0-9_-]/g, "_").slice(0, 100)}.wal`);
  }

  /** The most recently written WAL in `dir`, read; undefined when there is none. */
  static latest(dir: string): WalSnapshot | undefined {
    let files: string[];
    try {
      files = readdirSync(dir).filter((f) => f.endsWith(".wal"));
    } catch {
      return undefined;
    }
    const newest = files.map((f) => path.join(dir, f)).sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs)[0];
    return newest ? EventWal.read(newest) : undefined;
  }

  /** Read a WAL file (undefined if it has no readable base line). */
  static read(file: string): WalSnapshot | undefined {
    let text: string;
    try {
      text = readFileSync(file, "utf8");
    } catch {
      return undefined;
    }
    let snap: WalSnapshot | undefined;
    const torn: number[] = [];
    let offset = 0;
    for (const line of text.split("\n")) {
      const at = offset;
      offset += Buffer.byteLength(line) + 1;
      if (!line) continue;
      let parsed: WalLine;
      try {
        parsed = WalLine.parse(JSON.parse(line));
      } catch {
        torn.push(at);
        continue;
      }
      if (parsed.t === "base") snap = { ...parsed, pending: [], torn };
      else if (!snap) continue;
      else if (parsed.t === "frames") {
        snap.pending.push(...parsed.frames);
        snap.cursor = parsed.cursor;
        snap.state = parsed.state;
        snap.epoch = Math.max(snap.epoch, ...parsed.frames.map((f) => f.epoch));
      } else {
        snap.ackedSeq = Math.max(snap.ackedSeq, parsed.seq);
        snap.subjectSeq = parsed.seq >= snap.ackedSeq ? parsed.subjectSeq : snap.subjectSeq;
        snap.pending = snap.pending.filter((f) => f.seq > snap!.ackedSeq);
      }
    }
    return snap;
  }

  /**
   * Start a WAL file for `snap.session` holding `snap` (its base line and pending frames),
   * replacing any file of that session atomically; other sessions' WALs in `dir` are removed.
   */
  static create(dir: string, snap: WalSnapshot): EventWal {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const file = EventWal.fileOf(dir, snap.session);
    const tmp = `${file}.${process.pid}.tmp`;
    const fd = openSync(tmp, "w", 0o600);
    try {
      writeSync(fd, EventWal.baseText(snap));
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, file);
    for (const f of readdirSync(dir)) if (f.endsWith(".wal") && path.join(dir, f) !== file) unlinkSync(path.join(dir, f));
    return new EventWal(dir, file, { ...snap, pending: [...snap.pending], torn: [], store: WAL_STORE });
  }

  private static baseText(s: WalSnapshot): string {
    const base: WalLine = {
      t: "base",
      session: s.session,
      cursor: s.cursor,
      ackedSeq: s.ackedSeq,
      subjectSeq: s.subjectSeq,
      epoch: s.epoch,
      state: s.state,
      store: WAL_STORE,
    };
    const frames: WalLine[] = s.pending.length ? [{ t: "frames", frames: s.pending, cursor: s.cursor, state: s.state }] : [];
    return [base, ...frames].map((l) => JSON.stringify(l) + "\n").join("");
  }

  get snapshot(): Readonly<WalSnapshot> {
    return this.snap;
  }

  /** Frames written but not yet confirmed by the broker, in order. */
  get pending(): readonly AgUiFrame[] {
    return this.snap.pending;
  }

  /**
   * Write `frames` (and the cursor and run state after them) before anything is published.
   * `jsons`, when given, is each frame's `JSON.stringify` already made (the line is then built from it).
   */
  append(frames: AgUiFrame[], cursor: TranscriptCursor, state: RunState, jsons?: readonly string[]): void {
    const line: WalLine = { t: "frames", frames, cursor, state: { ...state, openTools: [...state.openTools] } };
    const text = jsons
      ? `{"t":"frames","frames":[${jsons.join(",")}],"cursor":${JSON.stringify(line.cursor)},"state":${JSON.stringify(line.state)}}`
      : JSON.stringify(line);
    writeSync(this.fd, text + "\n");
    this.snap.pending.push(...frames);
    this.snap.cursor = cursor;
    this.snap.state = line.state;
  }

  /** The broker stored frame `seq` at stream sequence `subjectSeq`. */
  ack(seq: number, subjectSeq: number): void {
    writeSync(this.fd, JSON.stringify({ t: "ack", seq, subjectSeq } satisfies WalLine) + "\n");
    this.snap.ackedSeq = seq;
    this.snap.subjectSeq = subjectSeq;
    // Acks come in order, one frame each: drop from the front (a filter per ack made a backlog of
    // n frames cost n² steps and as many arrays).
    const pending = this.snap.pending;
    let done = 0;
    while (done < pending.length && pending[done]!.seq <= seq) done++;
    if (done) pending.splice(0, done);
    // Keep the file short: rewrite it from its snapshot now and then.
    if (++this.acksSinceBase >= 1_000) this.compact();
  }

  /** Rewrite the file as a base line plus the pending frames. */
  compact(): void {
    closeSync(this.fd);
    const fresh = EventWal.create(this.dir, this.snap);
    this.fd = fresh.fd;
    this.acksSinceBase = 0;
  }

  close(): void {
    try {
      closeSync(this.fd);
    } catch {
      // already closed
    }
  }
}

import { createHash } from "node:crypto";
import { closeSync, existsSync, openSync, readSync, statSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { isPermissionDenied, isWrongLastSequence, type Endpoint, type Logger } from "../broker/index.js";
import { AGUI_FRAME_KIND, AGUI_PROTOCOL, EVENT_PLANE, eventsChannelOf, frameOf, type AgUiFrame } from "../schemas/index.js";
import { EventType } from "@ag-ui/core";
import { AgUiMapper, type RunEvent, type RunState } from "./agui.js";
import { EventWal, WAL_STORE, type TranscriptCursor, type WalSnapshot } from "./event-wal.js";
import type { TranscriptReader } from "../runtime/index.js";

/** What a SessionStart hook tells the plane. */
export interface SessionInfo {
  sessionId: string;
  transcriptPath?: string;
  /** startup | resume | clear | compact (Claude's SessionStart `source`). */
  source?: string;
}

export interface EventPlaneOptions {
  /** The seat's endpoint (posts as itself on `events.<owner>.<actor>`). */
  ep: Pick<Endpoint, "post" | "history" | "maxPayload" | "me">;
  /** How one line of the session file reads as transcript records (default: as is, Claude's transcript). */
  transcript?: TranscriptReader;
  /** The WAL directory (under the seat's state dir). */
  dir: string;
  log: Logger;
  /** Wait between attempts while the plane is down, ms (default 1,000). */
  retryMs?: number;
  /** How often the transcript is read while a session is attached, ms (default 250). */
  pollMs?: number;
  /** How long a new session's transcript may take to appear before a log line says so, ms (default 5,000). */
  firstWaitMs?: number;
}

/** Where the plane stands: establishing (reading the broker's last frame), live, halted (a disagreement), closed. */
export type PlaneStatus = "establishing" | "live" | "halted" | "closed";

/**
 * The message id of a frame: the same for the same frame (a republish after a lost ack dedupes on
 * the broker), different for another writer's frame of the same number (whose publish must meet
 * the expected-sequence check, not the dedupe).
 */
export function frameId(owner: string, actor: string, f: AgUiFrame, json = JSON.stringify(f)): string {
  const digest = createHash("sha256").update(json).digest("hex").slice(0, 16);
  return `agui-${owner}.${actor}-e${f.epoch}-s${f.seq}-${digest}`;
}

/** `JSON.stringify(f)`, from its events' JSON already made (`events` is a frame's last field). */
function frameJson(f: AgUiFrame, events: readonly string[]): string {
  return `${JSON.stringify({ ...f, events: [] }).slice(0, -2)}${events.join(",")}]}`;
}

const READ_CHUNK = 1 << 20;
const MAX_READ_PER_STEP = 4 << 20;

/**
 * The event plane of one seat (docs/events.md): tails the session's transcript (Claude's, or
 * another CLI's session file read as Claude's records by `transcript`), maps its records to
 * AG-UI events, writes them as frames to the WAL, and publishes them in order on
 * `events.<owner>.<actor>` with `Nats-Expected-Last-Subject-Sequence`. Nothing here runs on a
 * hook's path: hooks only note what happened and return.
 */
export class EventPlane {
  status: PlaneStatus = "establishing";
  /** Why the plane halted (both sequences named), when it did. */
  haltReason?: string;
  readonly channel: string;
  private wal?: EventWal;
  private mapper?: AgUiMapper;
  /** The broker's view once established: last confirmed frame, its stream sequence, this writer's epoch. */
  private head?: { ackedSeq: number; subjectSeq: number; epoch: number };
  private loaded?: WalSnapshot;
  private session?: SessionInfo & { boundary: number; at: number };
  private turnEnds: Array<"finished" | "failed"> = [];
  /** CUSTOM events waiting for the next step (an approval's ask, answer, expiry). */
  private customs: Array<{ name: string; value: unknown; at: number }> = [];
  private work: Promise<void> = Promise.resolve();
  private poll?: NodeJS.Timeout;
  private wake?: () => void;
  private publishing?: Promise<void>;
  /** The message id of each frame recorded by this incarnation, by frame number, until it is stored. */
  private readonly ids = new Map<number, string>();
  private warnedMissing = false;
  private failing = false;
  private queued = false;

  private readonly transcript: TranscriptReader;

  constructor(private readonly o: EventPlaneOptions) {
    this.channel = eventsChannelOf(o.ep.me);
    this.transcript = o.transcript ?? ((line) => [line]);
  }

  /** Read the WAL left by the previous incarnation and start establishing (retried every second until the mesh answers). */
  start(): void {
    if (this.poll) return; // started already (for a previous incarnation's frames, before the join)
    this.loaded = EventWal.latest(this.o.dir);
    for (const at of this.loaded?.torn ?? []) this.o.log.warn({ offset: at }, "skipped a torn write-ahead log line");
    this.poll = setInterval(() => this.kick(), this.o.pollMs ?? 250);
    this.poll.unref();
    this.kick();
  }

  /**
   * Start now if the previous incarnation's WAL holds frames the broker never confirmed (its
   * process was killed before its flush ended: Claude sends SIGKILL about half a second after
   * SIGINT), so they are published at this start rather than at the next session's first hook,
   * which may never come. True when it started.
   */
  startForLeftovers(): boolean {
    if (this.poll || !EventWal.latest(this.o.dir)?.pending.length) return false;
    this.o.log.info({ channel: this.channel }, "publishing the frames a previous incarnation left in the write-ahead log");
    this.start();
    return true;
  }

  /** A session started (SessionStart hook): where its transcript is and where reading starts. Returns at once. */
  sessionStart(info: SessionInfo): void {
    let boundary = 0;
    // A new session reads from the start; resumed, cleared and compacted ones from here on.
    if (info.source && info.source !== "startup" && info.transcriptPath) boundary = sizeOf(info.transcriptPath);
    this.session = { ...info, boundary, at: Date.now() };
    this.kick();
  }

  /**
   * A hook that names a session's transcript. Of a session the plane was not told of (its
   * SessionStart hook never reached the connector: it ran before the connector could be found),
   * attach to it as a new session; of the session it follows, whose SessionStart named no
   * transcript, take it. Either way the transcript is read from the start, so the first prompt's
   * frames are published too. Returns at once.
   */
  sessionSeen(info: SessionInfo): void {
    if (!info.transcriptPath) return;
    // A CLI that names its transcript only at a later hook (Copilot: its Stop) started the session
    // without one: the session's transcript is read from its start.
    if (this.session && !this.session.transcriptPath && this.session.sessionId === info.sessionId) {
      this.o.log.info({ sessionId: info.sessionId }, "the session named its transcript at a later hook");
      this.session = { ...this.session, transcriptPath: info.transcriptPath, boundary: 0 };
      this.kick();
      return;
    }
    if (this.session) return;
    this.o.log.info({ sessionId: info.sessionId }, "attached to the session at a later hook (its SessionStart did not reach the connector)");
    this.sessionStart({ sessionId: info.sessionId, transcriptPath: info.transcriptPath });
  }

  /** The turn ended (Stop: finished; StopFailure: failed). Its run closes once the transcript was read. Returns at once. */
  turnEnded(how: "finished" | "failed"): void {
    this.turnEnds.push(how);
    this.kick();
  }

  /**
   * Publish a CUSTOM event of Cotal's own (docs/events.md: `cotal.approval.*`), after what the
   * transcript holds by then, in the open run (or on its own). Returns at once; it waits in
   * memory until the plane follows a session.
   */
  custom(name: string, value: unknown): void {
    this.customs.push({ name, value, at: Date.now() });
    this.kick();
  }

  /** Something happened in the session (a prompt, a tool call): read the transcript soon. */
  poke(): void {
    this.kick();
  }

  /** Frames written to the WAL and not yet stored by the broker. */
  get backlog(): number {
    return this.wal?.pending.length ?? 0;
  }

  /** Read the transcript once more, stop; give publishing up to `flushMs` to send what the WAL holds (the rest goes next time). */
  async close(flushMs = 2_000): Promise<void> {
    if (this.status === "closed") return;
    // Never started (a connector that never joined, e.g. a health check): nothing to read or send.
    if (!this.poll) {
      this.status = "closed";
      return;
    }
    clearInterval(this.poll);
    const deadline = Date.now() + flushMs;
    // One last read: what the session wrote just before it ended goes out too (an establishing
    // plane establishes first; a mesh that does not answer in time leaves it all in the WAL).
    this.kick();
    await Promise.race([this.work.catch(() => undefined), sleep(flushMs, undefined, { ref: false })]);
    while (this.backlog > 0 && this.status === "live" && Date.now() < deadline) await sleep(20);
    this.status = "closed";
    this.wake?.();
    await this.publishing?.catch(() => undefined);
    this.wal?.close();
  }

  /** Queue one step (coalesced: at most one waits behind the running one). */
  private kick(): void {
    if (this.status === "closed" || this.status === "halted" || this.queued) return;
    this.queued = true;
    this.work = this.work
      .then(() => {
        this.queued = false;
        return this.step();
      })
      .catch((err: unknown) => this.o.log.warn({ err }, "event plane step failed; retrying"));
  }

  private async step(): Promise<void> {
    if (this.status === "establishing") {
      if (!(await this.establish())) return;
    }
    if (this.status !== "live") return;
    this.switchSession();
    if (!this.wal || !this.mapper) return;
    this.readTranscript();
    if (this.customs.length) {
      const runId = this.mapper.state.runId ?? "cotal";
      const events = this.customs.splice(0).map((c) => ({ runId, event: { type: EventType.CUSTOM, timestamp: c.at, name: c.name, value: c.value } as const }));
      this.record(events, this.wal.snapshot.cursor);
    }
    while (this.turnEnds.length) {
      const how = this.turnEnds.shift()!;
      this.record(this.mapper.close(how), this.wal.snapshot.cursor);
    }
  }

  /** Learn the broker's last frame on the plane and reconcile it with the WAL; false while the mesh is down. */
  private async establish(): Promise<boolean> {
    let last;
    try {
      last = (await this.o.ep.history(this.channel, { limit: 1 })).at(-1);
    } catch (err) {
      this.downOnce(err, "event plane unreachable; retrying every second");
      await sleep(this.o.retryMs ?? 1_000);
      return false;
    }
    const lastFrame = last ? frameOf(last.message.parts) : undefined;
    const broker = { seq: lastFrame?.seq ?? 0, subjectSeq: last?.seq ?? 0, epoch: lastFrame?.epoch ?? 0 };
    const snap = this.loaded && this.loaded.store !== WAL_STORE ? this.movedToOwnStream(this.loaded) : this.loaded;
    const epoch = Math.max(snap?.epoch ?? 0, broker.epoch) + 1;
    if (!snap) {
      this.head = { ackedSeq: broker.seq, subjectSeq: broker.subjectSeq, epoch };
    } else {
      const published = snap.pending.find((f) => f.seq === broker.seq);
      const { owner, actor } = this.o.ep.me;
      if (snap.ackedSeq === broker.seq && snap.subjectSeq === broker.subjectSeq) {
        // in step
      } else if (published && last && last.message.id === frameId(owner, actor, published)) {
        // Stored before the crash, but the ack never reached the WAL.
        snap.ackedSeq = broker.seq;
        snap.subjectSeq = broker.subjectSeq;
        snap.pending = snap.pending.filter((f) => f.seq > broker.seq);
      } else {
        this.halt(
          `the write-ahead log says frame ${snap.ackedSeq} at stream sequence ${snap.subjectSeq} is the last stored, the broker's last on ${this.channel} is frame ${broker.seq} at stream sequence ${broker.subjectSeq}`,
        );
        return false;
      }
      this.head = { ackedSeq: snap.ackedSeq, subjectSeq: snap.subjectSeq, epoch };
      this.open({ ...snap, epoch });
      // A run the previous incarnation left open is closed: nothing reads as running that is not.
      this.record(this.mapper!.close("interrupted"), snap.cursor);
    }
    this.status = "live";
    this.failing = false;
    this.o.log.info({ channel: this.channel, lastFrame: broker.seq, subjectSeq: broker.subjectSeq, epoch }, "event plane established");
    this.publishing ??= this.publishLoop();
    return true;
  }

  /**
   * A WAL from before the plane had its own stream names CHAT_'s sequences, which mean nothing on
   * EVENTS_ (docs/SPEC.md §9.4): the plane starts over there from frame 1, keeping the transcript
   * cursor, the run state and the frames not yet published (numbered on from 1).
   */
  private movedToOwnStream(old: WalSnapshot): WalSnapshot {
    this.o.log.info(
      { channel: this.channel, lastFrame: old.ackedSeq, waiting: old.pending.length },
      "the write-ahead log predates the event plane's own stream; the plane starts over there",
    );
    return { ...old, ackedSeq: 0, subjectSeq: 0, pending: old.pending.map((f, i) => ({ ...f, seq: i + 1 })), store: WAL_STORE };
  }

  private open(snap: WalSnapshot): void {
    this.wal?.close();
    this.wal = EventWal.create(this.o.dir, snap);
    this.mapper = new AgUiMapper(this.wal.snapshot.state);
  }

  /** Follow the session the last SessionStart named: continue its WAL, or start a new one. */
  private switchSession(): void {
    const s = this.session;
    if (!s || !this.head) return;
    const cur = this.wal?.snapshot;
    if (cur && cur.session === s.sessionId && (cur.cursor.transcript ?? undefined) === s.transcriptPath) return;
    if (cur && cur.session === s.sessionId && !s.transcriptPath) return;
    if (this.mapper && cur) this.record(this.mapper.close("interrupted"), cur.cursor);
    const acked = cur ? { ackedSeq: cur.ackedSeq, subjectSeq: cur.subjectSeq } : { ackedSeq: this.head.ackedSeq, subjectSeq: this.head.subjectSeq };
    const state: RunState = { threadId: s.sessionId, openTools: [] };
    this.open({
      session: s.sessionId,
      cursor: { transcript: s.transcriptPath ?? null, offset: s.boundary },
      ...acked,
      epoch: this.head.epoch,
      state,
      pending: cur ? [...cur.pending] : [],
      torn: [],
    });
    this.o.log.info({ session: s.sessionId, source: s.source, from: s.boundary }, "event plane follows a session");
  }

  /** Read complete transcript lines from the cursor and record their events. */
  private readTranscript(): void {
    const wal = this.wal!;
    const cur = wal.snapshot.cursor;
    if (!cur.transcript) return;
    if (!existsSync(cur.transcript)) {
      if (!this.warnedMissing && this.session && Date.now() - this.session.at > (this.o.firstWaitMs ?? 5_000)) {
        this.warnedMissing = true;
        this.o.log.warn({ transcript: cur.transcript }, "the session's transcript has not appeared; still waiting for it");
      }
      return;
    }
    // Polled every 250 ms on the connector's loop: nothing new written, nothing read.
    if (statSync(cur.transcript).size <= cur.offset) return;
    const fd = openSync(cur.transcript, "r");
    try {
      let offset = cur.offset;
      const buf = Buffer.alloc(READ_CHUNK);
      let carry = Buffer.alloc(0);
      let carryAt = offset;
      while (offset - cur.offset < MAX_READ_PER_STEP) {
        const n = readSync(fd, buf, 0, buf.length, offset);
        if (n <= 0) break;
        offset += n;
        const data = Buffer.concat([carry, buf.subarray(0, n)]);
        let start = 0;
        const events: RunEvent[] = [];
        for (let nl = data.indexOf(10, start); nl >= 0; nl = data.indexOf(10, start)) {
          const line = data.subarray(start, nl).toString("utf8");
          const at = carryAt + start;
          start = nl + 1;
          if (!line.trim()) continue;
          let rec: unknown;
          try {
            rec = JSON.parse(line);
          } catch {
            this.o.log.warn({ offset: at, transcript: cur.transcript }, "skipped a torn transcript line");
            continue;
          }
          for (const r of this.transcript(rec)) events.push(...this.mapper!.map(r));
        }
        carry = Buffer.from(data.subarray(start));
        carryAt += start;
        // The cursor moves only past complete lines.
        this.record(events, { transcript: cur.transcript, offset: carryAt });
      }
      // One line longer than a whole step would hold the cursor forever: skip past what was read
      // (the rest of that line then reads as a torn line and is skipped too), and say so.
      if (carryAt === cur.offset && offset - cur.offset >= MAX_READ_PER_STEP) {
        this.o.log.warn(
          { offset: cur.offset, transcript: cur.transcript, limit: MAX_READ_PER_STEP },
          "skipped a transcript line longer than the plane reads in one step",
        );
        this.record([], { transcript: cur.transcript, offset });
      }
    } finally {
      closeSync(fd);
    }
  }

  /**
   * Pack events into frames (one run per frame, each within what EVENTS_ stores: its 64 KiB
   * largest frame, or the server's payload if smaller, less room for the envelope and headers),
   * write them to the WAL, wake the publisher.
   */
  private record(events: RunEvent[], cursor: TranscriptCursor): void {
    const wal = this.wal;
    if (!wal || !this.head) return;
    const frames: AgUiFrame[] = [];
    // Each event is serialised once: its size packs the frame, and the frames' text, made from it,
    // is both the WAL's line and what the message id hashes.
    const texts: string[][] = [];
    const budget = Math.min(this.o.ep.maxPayload, EVENT_PLANE.maxFrameBytes) - 4_096;
    let next = Math.max(wal.snapshot.ackedSeq, wal.pending.at(-1)?.seq ?? 0) + 1;
    let size = 0;
    for (const { runId, event } of events) {
      const json = JSON.stringify(event);
      const bytes = Buffer.byteLength(json);
      const last = frames.at(-1);
      if (last && last.runId === runId && size + bytes < budget) {
        last.events.push(event);
        texts.at(-1)!.push(json);
        size += bytes + 1;
        continue;
      }
      frames.push({
        kind: AGUI_FRAME_KIND,
        protocol: AGUI_PROTOCOL,
        threadId: wal.snapshot.state.threadId,
        runId,
        epoch: this.head.epoch,
        seq: next++,
        events: [event],
      });
      texts.push([json]);
      size = bytes + 300;
    }
    if (!frames.length && cursor.offset === wal.snapshot.cursor.offset) return;
    const { owner, actor } = this.o.ep.me;
    const jsons = frames.map((f, i) => frameJson(f, texts[i]!));
    frames.forEach((f, i) => this.ids.set(f.seq, frameId(owner, actor, f, jsons[i])));
    wal.append(frames, cursor, this.mapper!.state, jsons);
    if (frames.length) this.wake?.();
  }

  /** Publish the WAL's frames in order, one at a time, each expecting the last stored one's stream sequence. */
  private async publishLoop(): Promise<void> {
    const { owner, actor } = this.o.ep.me;
    while (this.status === "live") {
      const wal = this.wal;
      const frame = wal?.pending[0];
      if (!wal || !frame) {
        await new Promise<void>((r) => {
          this.wake = r;
          setTimeout(r, 1_000).unref();
        });
        continue;
      }
      try {
        // A frame the previous incarnation left in the WAL has no id made yet.
        const id = this.ids.get(frame.seq) ?? frameId(owner, actor, frame);
        const ack = await this.o.ep.post(this.channel, [frame], { id, expectLastSubjectSequence: wal.snapshot.subjectSeq });
        wal.ack(frame.seq, ack.seq);
        this.ids.delete(frame.seq);
        this.failing = false;
      } catch (err) {
        if (isWrongLastSequence(err)) {
          const last = await this.o.ep.history(this.channel, { limit: 1 }).catch(() => []);
          const theirs = last.at(-1);
          this.halt(
            `this writer expected stream sequence ${wal.snapshot.subjectSeq} (frame ${wal.snapshot.ackedSeq}) to be the last on ${this.channel}, the broker's last is ${theirs ? `stream sequence ${theirs.seq}${frameOf(theirs.message.parts) ? ` (frame ${frameOf(theirs.message.parts)!.seq})` : ""}` : "unknown"}`,
          );
          return;
        }
        if (isPermissionDenied(err)) {
          // Final: only a credential minted for a seat may write its plane (a scoped reader may not).
          this.halt(
            `this credential may not publish on ${this.channel} (the broker refused it): a seat's credential needs --events (\`cotal mint ${actor} --profile agent --events --replace\`)`,
          );
          return;
        }
        this.downOnce(err, "publishing an event frame failed; the session goes on and the plane retries every second");
        await sleep(this.o.retryMs ?? 1_000);
      }
    }
  }

  private downOnce(err: unknown, msg: string): void {
    if (!this.failing) this.o.log.warn({ err: (err as Error)?.message ?? String(err) }, msg);
    else this.o.log.debug({ err: (err as Error)?.message ?? String(err) }, msg);
    this.failing = true;
  }

  private halt(why: string): void {
    this.status = "halted";
    this.haltReason = why;
    this.o.log.error({ channel: this.channel }, `event plane stopped publishing: ${why}`);
    this.wake?.();
  }
}

function sizeOf(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}

import type { KV } from "@nats-io/kv";
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import { beatFilter, BUCKET_VALUE_BYTES, describeIssues, PRESENCE, PresenceBeat, PrincipalId, type Presence } from "../schemas/index.js";
import type { WatchWatermark } from "./watch-watermark.js";
import type { Logger } from "./log.js";
import { LogSampler } from "./log-sampler.js";
import { watchPresence, type PresenceWrite, type Roster } from "./roster.js";

/**
 * The mesh service's liveness judge (protocol 0.3). Presence used to cost n² messages: every
 * endpoint rewrote its key every heartbeat and every endpoint watched every key. Now liveness and
 * status travel apart:
 *
 * - an endpoint writes its presence record only when it changes (every watcher gets changes);
 * - it beats on `cotal.<space>.beat.<o>.<a>`, a core subject only this judge reads;
 * - this judge deletes the key of an endpoint that neither beat nor wrote for the liveness
 *   window: the one message watchers get for a death. An endpoint that sees its own key
 *   deleted while it lives writes it again (that is the online transition).
 *
 * Who the judge holds online is kept in the members bucket (`live.<o>.<a>`), written only on
 * transitions, so a restarted judge knows whom watchers still show online: each gets a full
 * liveness window from the restart to beat again before it is taken offline. Without that list a
 * record aged out of the bucket would leave a dead endpoint online in every view forever.
 *
 * A beat costs the judge almost nothing before it is read (floods, docs/security.md): one larger
 * than a presence record can be, or within BEAT_GAP_MS of the last one read from the same subject,
 * is dropped unread; what is read and refused is logged through a LogSampler (a line, then a count).
 */
export class LivenessJudge {
  /** Last proof of life per id (a beat or a live write), local epoch ms. */
  private readonly proof = new Map<string, number>();
  /** Ids held online, mirrored to `live.<id>` in the members bucket. */
  private readonly online = new Set<string>();
  /** Per id, the members-bucket writes in order (put and delete of one key never reorder). */
  private readonly chains = new Map<string, Promise<void>>();
  /** When a stale goodbye was last deleted, per id (see correctStaleGoodbye). */
  private readonly corrected = new Map<string, number>();
  /** When a beat was last read, per id (BEAT_GAP_MS). */
  private readonly lastRead = new Map<string, number>();
  private readonly sampled: LogSampler;
  private sub?: Subscription;
  private sweep?: NodeJS.Timeout;

  private constructor(
    private readonly takeOffline: (id: string) => Promise<unknown>,
    private readonly members: KV,
    private readonly roster: Roster,
    private readonly log: Logger,
    private readonly livenessMs: number,
    /** Length of `cotal.<space>.beat.`: what comes after it is the id. */
    private readonly prefixLength: number,
    warnIntervalMs: number | undefined,
  ) {
    this.sampled = new LogSampler(log, warnIntervalMs !== undefined ? { intervalMs: warnIntervalMs } : {});
  }

  /**
   * Start judging: beats first, then who was held online before a restart, then the bucket.
   * `takeOffline` deletes a presence key where watchers see it (see MeshService: in static mode
   * that is the clients account, not the mesh service's own). `beats`: the connection beats are
   * read on (default `nc`); the mesh service gives them one of their own, so a flood of beats is
   * never queued ahead of its control rail, and a beats connection the server cuts as a slow
   * consumer leaves the rail up.
   */
  static async start(
    nc: NatsConnection,
    space: string,
    presence: KV,
    members: KV,
    roster: Roster,
    log: Logger,
    livenessMs: number = PRESENCE.livenessMs,
    takeOffline: (id: string) => Promise<unknown> = (id) => presence.delete(id),
    watermark?: WatchWatermark,
    beats: NatsConnection = nc,
    /** How long one sender's repeated warnings are counted instead of logged, ms (LogSampler; default 10 s). */
    warnIntervalMs?: number,
  ): Promise<LivenessJudge> {
    const filter = beatFilter(space);
    const judge = new LivenessJudge(takeOffline, members, roster, log, livenessMs, filter.length - "*.*".length, warnIntervalMs);
    judge.sub = beats.subscribe(filter, {
      callback: (err, msg) => (err ? log.error({ err }, "beat subscription ended; liveness is no longer judged") : judge.beat(msg.subject, msg.data)),
    });
    const startedAt = Date.now();
    for await (const key of await members.keys(`${LIVE_PREFIX}>`)) {
      const id = key.slice(LIVE_PREFIX.length);
      judge.online.add(id);
      // A full window from the restart: a live endpoint beats again long before it ends.
      if (!judge.proof.has(id)) judge.proof.set(id, startedAt);
    }
    await watchPresence(presence, roster, log, (w) => judge.write(w), watermark);
    await beats.flush();
    const every = Math.max(50, Math.min(500, Math.floor(livenessMs / 4)));
    judge.sweep = setInterval(() => judge.judge(), every);
    judge.sweep.unref();
    log.info({ online: judge.online.size, livenessMs }, "judging liveness from beats");
    return judge;
  }

  /** Ids held online now. */
  onlineIds(): string[] {
    return [...this.online].sort();
  }

  stop(): void {
    if (this.sweep) clearInterval(this.sweep);
    this.sub?.unsubscribe();
    this.sampled.stop();
  }

  private beat(subject: string, data: Uint8Array): void {
    // The id is the subject's last two tokens, which the broker pins to the sender.
    const id = subject.slice(this.prefixLength);
    if (data.length > MAX_BEAT_BYTES) {
      this.sampled.warn(id, "beat-too-large", { subject, bytes: data.length, limit: MAX_BEAT_BYTES }, "dropped a beat larger than a presence record can be");
      return;
    }
    const now = Date.now();
    const last = this.lastRead.get(id);
    if (last !== undefined && now - last < BEAT_GAP_MS) {
      this.sampled.warn(id, "beat-too-often", { subject, gapMs: BEAT_GAP_MS }, "dropped a beat that came too soon after the last one read from its subject");
      return;
    }
    this.lastRead.set(id, now);
    let parsed: ReturnType<typeof PresenceBeat.safeParse>;
    try {
      parsed = PresenceBeat.safeParse(JSON.parse(new TextDecoder().decode(data)));
    } catch {
      this.sampled.warn(id, "beat-not-json", { subject }, "dropped a beat that is not JSON");
      return;
    }
    if (!parsed.success) {
      this.sampled.warn(id, "beat-malformed", { subject, issues: describeIssues(parsed.error).slice(0, 5) }, "dropped a malformed beat");
      return;
    }
    if (parsed.data.presence.card.id !== id || !PrincipalId.safeParse(id).success) {
      this.sampled.warn(id, "beat-card-id", { subject, claimed: parsed.data.presence.card.id }, "dropped a beat whose card id disagrees with its subject");
      return;
    }
    this.proof.set(id, now);
    this.correctStaleGoodbye(id, parsed.data.presence, now);
    // The record may have aged out of the bucket (a restart): the beat carries it.
    this.roster.merge(id, parsed.data.presence, now);
    this.roster.touch(id, now);
    if (parsed.data.presence.status !== "offline") this.markOnline(id);
  }

  /**
   * A live endpoint beats while its key holds a newer goodbye than its own record: another
   * incarnation's (the listener a `listen --takeover` replaced) landed after its write. Records
   * are written on change only, so nothing would undo it; deleting the key does, as the endpoint
   * writes its record again when it sees its key deleted. At most once a window per id.
   */
  private correctStaleGoodbye(id: string, beating: Presence, now: number): void {
    const cur = this.roster.record(id);
    if (!cur || cur.deleted || cur.presence.status !== "offline" || beating.status === "offline" || beating.ts >= cur.presence.ts) return;
    if (now - (this.corrected.get(id) ?? 0) < this.livenessMs) return;
    this.corrected.set(id, now);
    this.log.info({ id }, "a live endpoint's key holds an older incarnation's goodbye: deleting it so the endpoint writes its record again");
    this.takeOffline(id).catch((err: unknown) => this.log.warn({ err, id }, "could not delete a stale goodbye"));
  }

  private write(w: PresenceWrite): void {
    if (w.deleted) {
      this.proof.delete(w.key);
      this.markOffline(w.key);
      return;
    }
    const status = (w.value as { status?: unknown } | undefined)?.status;
    if (status === "offline") {
      // A goodbye: the endpoint said so itself.
      this.proof.delete(w.key);
      this.markOffline(w.key);
    } else {
      // Only the owner may write its key: any other write is proof it lives.
      this.proof.set(w.key, Date.now());
      this.markOnline(w.key);
    }
  }

  /** Take offline everyone held online without proof of life for the window. */
  private judge(): void {
    const now = Date.now();
    for (const [id, at] of this.lastRead) if (now - at >= BEAT_GAP_MS) this.lastRead.delete(id);
    for (const id of this.online) {
      const last = this.proof.get(id) ?? 0;
      if (now - last <= this.livenessMs) continue;
      this.log.info({ id, silentMs: now - last }, "no beat for the liveness window: taking it offline");
      this.markOffline(id);
      this.proof.delete(id);
      // The one message watchers get for a death. The endpoint, if it lives after all, writes again.
      this.takeOffline(id).catch((err: unknown) => this.log.warn({ err, id }, "could not delete the presence key of a silent endpoint"));
    }
  }

  private markOnline(id: string): void {
    if (this.online.has(id)) return;
    this.online.add(id);
    this.persist(id, () => this.members.put(`${LIVE_PREFIX}${id}`, JSON.stringify({ since: Date.now() })));
  }

  private markOffline(id: string): void {
    if (!this.online.delete(id)) return;
    this.persist(id, () => this.members.delete(`${LIVE_PREFIX}${id}`));
  }

  private persist(id: string, op: () => Promise<unknown>): void {
    const next = (this.chains.get(id) ?? Promise.resolve()).then(op).then(
      () => undefined,
      (err: unknown) => this.log.warn({ err, id }, "could not record a liveness transition in the members bucket"),
    );
    this.chains.set(id, next);
    void next.then(() => {
      if (this.chains.get(id) === next) this.chains.delete(id);
    });
  }
}

/**
 * Least time between two beats of one subject that are both read, ms. Endpoints beat every
 * heartbeat (PRESENCE.heartbeatMs; 100 ms in the fastest tests): only a flood beats faster, and
 * its extra beats are dropped unread, so one credential costs the judge a parse per 50 ms at most.
 */
export const BEAT_GAP_MS = 50;

/** Largest beat read: a presence record at its bound plus the beat's own fields. */
export const MAX_BEAT_BYTES = BUCKET_VALUE_BYTES.presence + 1024;

/** Members-bucket keys of ids held online: `live.<owner>.<actor>`. */
export const LIVE_PREFIX = "live.";

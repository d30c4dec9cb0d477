import type { KV } from "@nats-io/kv";
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import { beatFilter, describeIssues, PRESENCE, PresenceBeat, PrincipalId, type Presence } from "../schemas/index.js";
import type { WatchWatermark } from "./watch-watermark.js";
import type { Logger } from "./log.js";
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
  private sub?: Subscription;
  private sweep?: NodeJS.Timeout;

  private constructor(
    private readonly takeOffline: (id: string) => Promise<unknown>,
    private readonly members: KV,
    private readonly roster: Roster,
    private readonly log: Logger,
    private readonly livenessMs: number,
  ) {}

  /**
   * Start judging: beats first, then who was held online before a restart, then the bucket.
   * `takeOffline` deletes a presence key where watchers see it (see MeshService: in static mode
   * that is the clients account, not the mesh service's own).
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
  ): Promise<LivenessJudge> {
    const judge = new LivenessJudge(takeOffline, members, roster, log, livenessMs);
    judge.sub = nc.subscribe(beatFilter(space), {
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
    await nc.flush();
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
  }

  private beat(subject: string, data: Uint8Array): void {
    const id = subject.split(".").slice(3).join(".");
    let parsed: ReturnType<typeof PresenceBeat.safeParse>;
    try {
      parsed = PresenceBeat.safeParse(JSON.parse(new TextDecoder().decode(data)));
    } catch {
      this.log.warn({ subject }, "dropped a beat that is not JSON");
      return;
    }
    if (!parsed.success) {
      this.log.warn({ subject, issues: describeIssues(parsed.error).slice(0, 5) }, "dropped a malformed beat");
      return;
    }
    if (parsed.data.presence.card.id !== id || !PrincipalId.safeParse(id).success) {
      this.log.warn({ subject, claimed: parsed.data.presence.card.id }, "dropped a beat whose card id disagrees with its subject");
      return;
    }
    const now = Date.now();
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

/** Members-bucket keys of ids held online: `live.<owner>.<actor>`. */
export const LIVE_PREFIX = "live.";

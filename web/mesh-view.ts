import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import type { Msg, NatsConnection, Subscription } from "@nats-io/transport-node";
import {
  callControl,
  collectHistory,
  connectMesh,
  credsCaller,
  followPresence,
  isPermissionDenied,
  jetStreamConnection,
  JS_OPTIONS,
  Roster,
  verifyEnvelope,
  type Logger,
} from "../broker/index.js";
import {
  eventsChannelOf,
  filters,
  frameOf,
  messageText,
  parsePrincipal,
  principalId,
  type AgUiFrame,
  type CotalMessage,
  type HistoryItem,
  type SeatEvent,
} from "../schemas/index.js";
import { renderMarkdown } from "./markdown.js";
import { rosterRows, type PendingMail, type RosterRow } from "./roster-rows.js";
import { postCounts, readManagers, readPending, readWaitingDms, SeatLogCursor, type ManagerBeat } from "./stores.js";
import { TimelineFolder, type TimelineEntry } from "./timeline.js";

/** Where the dashboard reads from and with what. */
export interface MeshViewOptions {
  server: string;
  space: string;
  /** The credential it reads with (a static mesh); none on an open mesh. */
  creds?: string | undefined;
  /**
   * The credential's profile, as its tags say (`admin`, `observer`, `agent`, …; undefined on an
   * open mesh). DM bodies are served only when it is `admin`.
   */
  profile?: string | undefined;
  log: Logger;
  /** How far back history reaches at start, ms (default 1 h). */
  historyMs?: number;
  /** How often stores are read and state is pushed, ms (default 1,000). */
  pollMs?: number;
}

/** A channel post as the Feed shows it. */
export interface FeedPost {
  id: string;
  channel: string;
  /** The channel's delivery class (`live` or `durable`). */
  class: string;
  from: string;
  /** Who really sent it for `from` (the operator's `--as NAME --impersonate`): every view says so. */
  sentBy?: string;
  at: number;
  /** Sanitized HTML of its text (see markdown.ts). */
  html: string;
  /** Kinds of its other parts (files, data), named. */
  parts: string[];
  historical: boolean;
}

/** How fresh one source of the dashboard is. */
export interface SourceState {
  /** Its last read succeeded. */
  ok: boolean;
  /** When it was last read successfully, Unix ms. */
  at?: number;
  /** Why it failed, or why this credential cannot read it. */
  error?: string;
}

/** A seat as the seat log tells it. */
export interface SeatSummary {
  seat: string;
  agent?: string;
  manager?: string;
  /** Its last lifecycle event's type (requested, launched, joined, exited, restarted, fenced, retired). */
  state: string;
  at: number;
}

/** A manager: its heartbeat (if current) and its live seats. */
export interface ManagerRow {
  instance: string;
  host?: string;
  pid?: number;
  maxSeats?: number;
  heartbeatAt?: number;
  health: "ok" | "late" | "gone";
  seats: string[];
}

/** Everything the page's views but the timelines and the feed need, pushed every poll. */
export interface StateSnapshot {
  now: number;
  space: string;
  /** The connection to the mesh is up; when false everything shown is stale. */
  connected: boolean;
  profile: string;
  /** DM bodies are served (the credential is an admin's). */
  dmBodies: boolean;
  roster: RosterRow[];
  managers: ManagerRow[];
  channels: Array<{ name: string; class: string }>;
  sources: Record<"roster" | "pending" | "seats" | "managers" | "feed", SourceState>;
}

/** The Agent detail view's data. */
export interface AgentDetail {
  id: string;
  row?: RosterRow;
  timeline: TimelineEntry[];
  /** Its seat log: lifecycle events in order, with who wrote them. */
  seatLog: Array<{ at: number; type: string; manager?: string; detail?: string }>;
  pending?: PendingMail;
  /** Waiting DMs with their bodies: only for an admin credential; otherwise absent. */
  waiting?: Array<{ from: string; sentBy?: string; at: number; html: string }>;
  dmBodies: boolean;
}

/** What is pushed to the page as it happens. */
export type Push = { type: "post"; post: FeedPost } | { type: "timeline"; agent: string; entries: TimelineEntry[] } | { type: "state"; state: StateSnapshot };

const FEED_KEEP = 500;
const TIMELINE_KEEP = 500;
/** A manager whose heartbeat is older than this is late (it heartbeats every few seconds; entries expire after 10 s). */
const MANAGER_LATE_MS = 6_000;

/**
 * The dashboard's model of the mesh, read-only: the roster (live presence), channel posts and
 * every agent's event plane (history, then live by core subscription), and — each poll — the
 * waiting DMs, the seat log and the managers' heartbeats. Each source says when it was last read,
 * so the page marks what went stale instead of showing it as current.
 */
export class MeshView {
  private readonly listeners = new Set<(p: Push) => void>();
  private readonly roster: Roster;
  private readonly feed: FeedPost[] = [];
  private readonly timelines = new Map<
    string,
    { entries: TimelineEntry[]; folder: TimelineFolder; ready: boolean; held: Array<{ frame: AgUiFrame; at: number; id: string }> }
  >();
  private readonly seen = new Set<string>();
  private readonly seats = new Map<string, SeatEvent[]>();
  private readonly channelClass = new Map<string, string>();
  private pending: Map<string, PendingMail> | undefined;
  private managers: ManagerBeat[] = [];
  private connected = true;
  private closed = false;
  private timer?: NodeJS.Timeout;
  private sub?: Subscription;
  private eventsSub?: Subscription;
  private readonly sources: StateSnapshot["sources"] = {
    roster: { ok: false },
    pending: { ok: false },
    seats: { ok: false },
    managers: { ok: false },
    feed: { ok: false },
  };
  private readonly seatLog: SeatLogCursor;
  private polling = false;
  private rosterFollowed = false;

  private constructor(
    private readonly o: MeshViewOptions,
    private readonly nc: NatsConnection,
    private readonly jsm: JetStreamManager,
  ) {
    this.roster = new Roster(o.log);
    this.seatLog = new SeatLogCursor(jsm, o.space, o.log);
  }

  /** Connect and load: roster, channels, history; then follow live and poll the stores. */
  static async open(o: MeshViewOptions): Promise<MeshView> {
    const nc = await connectMesh({ server: o.server, creds: o.creds, name: "cotal-web" });
    try {
      const view = new MeshView(o, nc, await jetstreamManager(jetStreamConnection(nc, o.creds), JS_OPTIONS));
      await view.start();
      return view;
    } catch (err) {
      await nc.close().catch(() => undefined);
      throw err;
    }
  }

  /** Whether DM bodies may be served: only to an admin credential (the broker lets only admins read DMs). */
  get dmBodies(): boolean {
    return this.o.profile === "admin";
  }

  onPush(fn: (p: Push) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  private push(p: Push): void {
    for (const fn of this.listeners) {
      try {
        fn(p);
      } catch (err) {
        this.o.log.debug({ err }, "a page listener failed");
      }
    }
  }

  private get caller() {
    return credsCaller(this.o.creds);
  }

  private async start(): Promise<void> {
    void (async () => {
      for await (const s of this.nc.status()) {
        if (s.type === "disconnect") this.connected = false;
        if (s.type === "reconnect") this.connected = true;
      }
    })().catch(() => undefined);
    void this.nc.closed().then(() => (this.connected = false));
    // Live posts and event-plane frames first (held per plane until its history is in), so nothing falls between.
    const live = (err: Error | null, msg: Msg) => {
      if (err) {
        this.sources.feed = { ok: false, error: `live posts ended: ${err.message}` };
        return;
      }
      const v = verifyEnvelope(msg.subject, msg.data, this.o.log);
      if (v?.kind === "channel" && v.channel) this.take(v.channel, principalId(v.from), v.message, v.message.ts, false);
    };
    this.sub = this.nc.subscribe(filters.kind(this.o.space, "chat"), { callback: live });
    this.eventsSub = this.nc.subscribe(filters.kind(this.o.space, "events"), { callback: live });
    try {
      await followPresence(
        this.nc,
        this.o.space,
        this.roster,
        (after) => callControl(this.nc, this.o.space, "roster", this.caller, after ? { after } : {}),
        this.o.log,
      );
      this.sources.roster = { ok: true, at: Date.now() };
      this.rosterFollowed = true;
    } catch (err) {
      this.sources.roster = { ok: false, error: reason(err) };
    }
    this.roster.onChange(() => void this.followPlanes());
    await this.readChannels();
    await this.loadFeedHistory();
    await this.followPlanes();
    await this.poll();
    this.timer = setInterval(() => void this.poll(), this.o.pollMs ?? 1_000);
    this.timer.unref();
  }

  private get sinceMs(): number {
    return Date.now() - (this.o.historyMs ?? 60 * 60 * 1000);
  }

  private async history(channel: string, limit?: number): Promise<HistoryItem[]> {
    return collectHistory(channel, { sinceMs: this.sinceMs, ...(limit ? { limit } : {}) }, (args) =>
      callControl(this.nc, this.o.space, "history", this.caller, args),
    );
  }

  private async readChannels(): Promise<void> {
    try {
      for (const c of await callControl(this.nc, this.o.space, "channels", this.caller)) this.channelClass.set(c.name, c.config.class);
    } catch (err) {
      this.o.log.debug({ err: reason(err) }, "channel list not readable");
    }
  }

  /**
   * The channels worth a history at start: those holding posts (the chat stream's per-subject
   * counts: a channel posted to and never configured, with nobody on it now, is one), the
   * configured ones and those the roster's seats joined.
   */
  private async knownChannels(): Promise<string[]> {
    const all = new Set(this.channelClass.keys());
    try {
      for (const c of (await postCounts(this.jsm, this.o.space)).keys()) all.add(c);
    } catch (err) {
      this.o.log.debug({ err: reason(err) }, "channels with posts not readable; the feed's history covers configured and joined ones");
    }
    for (const e of this.roster.entries()) for (const c of e.presence.channels) all.add(c);
    return [...all].filter((c) => !c.startsWith("events."));
  }

  private async loadFeedHistory(): Promise<void> {
    const refused: string[] = [];
    for (const channel of await this.knownChannels()) {
      try {
        for (const h of await this.history(channel, 200)) this.take(channel, principalId(h.from), h.message, h.storedAt, true);
      } catch (err) {
        refused.push(channel);
        this.o.log.debug({ channel, err: reason(err) }, "channel history not readable; left out");
      }
    }
    this.sources.feed = { ok: true, at: Date.now(), ...(refused.length ? { error: `not readable with this credential: ${refused.join(", ")}` } : {}) };
  }

  /** Start following the event plane of every agent on the roster (history first). */
  private async followPlanes(): Promise<void> {
    for (const e of this.roster.entries()) {
      if (e.presence.card.kind !== "agent" || this.timelines.has(e.id)) continue;
      const t = { entries: [] as TimelineEntry[], folder: new TimelineFolder(), ready: false, held: [] as Array<{ frame: AgUiFrame; at: number; id: string }> };
      this.timelines.set(e.id, t);
      let items: HistoryItem[] = [];
      try {
        items = await this.history(eventsChannelOf(parsePrincipal(e.id)));
      } catch (err) {
        this.o.log.debug({ agent: e.id, err: reason(err) }, "event plane not readable with this credential; left out");
      }
      const frames = items
        .filter((h) => principalId(h.from) === e.id)
        .map((h) => ({ frame: frameOf(h.message.parts), at: h.storedAt, id: h.message.id }))
        .filter((f): f is { frame: AgUiFrame; at: number; id: string } => f.frame !== undefined);
      t.ready = true;
      // Plane order is frame order; live frames that arrived meanwhile follow, deduplicated by id.
      this.foldFrames(
        e.id,
        [...frames, ...t.held.splice(0)].sort((a, b) => a.frame.seq - b.frame.seq),
      );
    }
  }

  private foldFrames(agent: string, frames: Array<{ frame: AgUiFrame; at: number; id: string }>): void {
    const t = this.timelines.get(agent);
    if (!t) return;
    const added: TimelineEntry[] = [];
    for (const f of frames) {
      if (this.seen.has(f.id)) continue;
      this.remember(f.id);
      added.push(...t.folder.fold(f.frame, f.at));
    }
    if (!added.length) return;
    t.entries.push(...added);
    if (t.entries.length > TIMELINE_KEEP) t.entries.splice(0, t.entries.length - TIMELINE_KEEP);
    this.push({ type: "timeline", agent, entries: added });
  }

  private remember(id: string): void {
    this.seen.add(id);
    if (this.seen.size > 200_000) this.seen.clear();
  }

  /** A post, live or from history: a frame goes to its agent's timeline, anything else to the feed. */
  private take(channel: string, from: string, message: CotalMessage, at: number, historical: boolean): void {
    if (channel.startsWith("events.")) {
      const agent = channel.slice("events.".length);
      // Only the plane's own seat may speak on it; anything else is not its activity.
      if (agent !== from) return;
      const frame = frameOf(message.parts);
      if (!frame) return;
      const t = this.timelines.get(agent);
      if (!t) return; // not on the roster yet: its history is read when it appears
      if (!t.ready) t.held.push({ frame, at, id: message.id });
      else this.foldFrames(agent, [{ frame, at, id: message.id }]);
      return;
    }
    if (this.seen.has(message.id)) return;
    this.remember(message.id);
    const post = this.postOf(channel, from, message, at, historical);
    this.feed.push(post);
    if (this.feed.length > FEED_KEEP) this.feed.splice(0, this.feed.length - FEED_KEEP);
    if (!historical) this.sources.feed = { ...this.sources.feed, ok: true, at: Date.now() };
    this.push({ type: "post", post });
  }

  /** Read the stores (waiting DMs, seat log, heartbeats), then push the state. */
  private async poll(): Promise<void> {
    if (this.polling || this.closed) return;
    this.polling = true;
    try {
      await this.read("pending", async () => (this.pending = await readPending(this.jsm, this.o.space)));
      await this.read("seats", async () => {
        for (const ev of await this.seatLog.read()) {
          const list = this.seats.get(ev.seat) ?? [];
          list.push(ev);
          if (list.length > 200) list.shift();
          this.seats.set(ev.seat, list);
        }
      });
      await this.read("managers", async () => (this.managers = await readManagers(this.jsm, this.o.space)));
      if (this.connected && this.rosterFollowed) this.sources.roster = { ok: true, at: Date.now() };
      if (this.connected && this.sources.feed.ok) this.sources.feed = { ...this.sources.feed, at: Date.now() };
      this.push({ type: "state", state: this.state() });
    } finally {
      this.polling = false;
    }
  }

  private async read(source: "pending" | "seats" | "managers", fn: () => Promise<unknown>): Promise<void> {
    try {
      await fn();
      this.sources[source] = { ok: true, at: Date.now() };
    } catch (err) {
      const denied = isPermissionDenied(err) || /permission/i.test(String((err as Error)?.message));
      if (source === "pending" && denied) this.pending = undefined;
      this.sources[source] = {
        ok: false,
        ...(this.sources[source].at ? { at: this.sources[source].at } : {}),
        error: denied ? "not readable with this credential" : reason(err),
      };
    }
  }

  state(now = Date.now()): StateSnapshot {
    return {
      now,
      space: this.o.space,
      connected: this.connected,
      profile: this.o.profile ?? "open mesh",
      dmBodies: this.dmBodies,
      roster: rosterRows(this.roster.entries(now), this.pending, now).map((r) => {
        const by = spawnerOf(this.seats.get(r.id));
        return by ? { ...r, spawnedBy: by } : r;
      }),
      managers: this.managerRows(now),
      channels: [...new Set([...this.channelClass.keys(), ...this.feed.map((p) => p.channel)])]
        .sort()
        .map((name) => ({ name, class: this.channelClass.get(name) ?? "durable" })),
      sources: this.sources,
    };
  }

  private seatSummaries(): SeatSummary[] {
    return [...this.seats.entries()].map(([seat, events]) => {
      const last = events[events.length - 1]!;
      const agent = events.findLast((e) => e.type === "requested");
      const manager = events.findLast((e) => e.manager)?.manager;
      return { seat, state: last.type, at: last.ts, ...(agent?.type === "requested" ? { agent: agent.agent } : {}), ...(manager ? { manager } : {}) };
    });
  }

  private managerRows(now: number): ManagerRow[] {
    const rows = new Map<string, ManagerRow>();
    for (const b of this.managers) {
      rows.set(b.instance, {
        instance: b.instance,
        ...(b.host ? { host: b.host } : {}),
        ...(b.pid ? { pid: b.pid } : {}),
        ...(b.maxSeats ? { maxSeats: b.maxSeats } : {}),
        heartbeatAt: b.at,
        health: now - b.at > MANAGER_LATE_MS ? "late" : "ok",
        seats: [],
      });
    }
    for (const s of this.seatSummaries()) {
      if (!s.manager || s.state === "retired" || s.seat.startsWith("cotal_run.")) continue;
      const row = rows.get(s.manager) ?? { instance: s.manager, health: "gone" as const, seats: [] };
      row.seats.push(s.seat);
      rows.set(s.manager, row);
    }
    return [...rows.values()].sort((a, b) => a.instance.localeCompare(b.instance));
  }

  /** The feed and every timeline as they stand (sent to a page when it connects). */
  backlog(): { posts: FeedPost[]; timelines: Record<string, TimelineEntry[]> } {
    return { posts: [...this.feed], timelines: Object.fromEntries([...this.timelines].map(([id, t]) => [id, [...t.entries]])) };
  }

  /** One channel's stored posts (newest `limit`), for its own view. */
  async channel(name: string, limit: number): Promise<FeedPost[]> {
    return (await this.history(name, limit)).map((h) => this.postOf(name, principalId(h.from), h.message, h.storedAt, true));
  }

  /** A post as the page shows it: `from` is the verified sender, `sentBy` who really sent it, if someone did for them. */
  private postOf(channel: string, from: string, message: CotalMessage, at: number, historical: boolean): FeedPost {
    return {
      id: message.id,
      channel,
      class: this.channelClass.get(channel) ?? "durable",
      from,
      ...(message.sentBy ? { sentBy: message.sentBy } : {}),
      at,
      html: renderMarkdown(messageText(message)),
      parts: message.parts.filter((p) => p.kind !== "text").map((p) => p.kind),
      historical,
    };
  }

  /** One agent's detail: timeline, seat log, waiting mail (bodies only for an admin credential). */
  async agent(id: string): Promise<AgentDetail> {
    const now = Date.now();
    const row = this.state(now).roster.find((r) => r.id === id);
    const seatLog = (this.seats.get(id) ?? []).map((e) => ({ at: e.ts, type: e.type, ...(e.manager ? { manager: e.manager } : {}), ...seatDetail(e) }));
    const detail: AgentDetail = { id, timeline: [...(this.timelines.get(id)?.entries ?? [])], seatLog, dmBodies: this.dmBodies, ...(row ? { row } : {}) };
    const pending = this.pending?.get(id) ?? (this.pending ? { count: 0 } : undefined);
    if (pending) detail.pending = pending;
    // The one place a DM body is read: never for a credential that is not an admin's.
    if (this.dmBodies && pending && pending.count > 0) {
      const waiting = await readWaitingDms(this.jsm, this.o.space, id, 20, this.o.log);
      detail.waiting = waiting.map((w) => ({ from: w.from, ...(w.sentBy ? { sentBy: w.sentBy } : {}), at: w.at, html: renderMarkdown(w.text) }));
    }
    return detail;
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.sub?.unsubscribe();
    this.eventsSub?.unsubscribe();
    this.roster.stop();
    this.listeners.clear();
    if (!this.nc.isClosed()) await this.nc.close().catch(() => undefined);
  }
}

/**
 * Who a seat answers to, as its manager's log says (docs/manager.md, Helpers): the spawner its
 * current incarnation's `requested` names, then each hand-over's `to`; none once it is retired, or
 * for the operator's seats. A presence card never decides it.
 */
export function spawnerOf(events: readonly SeatEvent[] | undefined): string | undefined {
  let by: string | undefined;
  for (const e of events ?? []) {
    if (e.type === "requested") by = e.spawnedBy;
    else if (e.type === "handed-over") by = e.to;
    else if (e.type === "retired") by = undefined;
  }
  return by;
}

function seatDetail(e: SeatEvent): { detail?: string } {
  switch (e.type) {
    case "requested":
      return {
        detail: [`agent ${e.agent}`, e.terminal ? `terminal ${e.terminal}` : "", e.by ? `by ${e.by}` : "", e.spawnedBy ? `spawned by ${e.spawnedBy}` : ""]
          .filter(Boolean)
          .join(", "),
      };
    case "handed-over":
      return { detail: `handed over by ${e.from} to ${e.to ?? "the operator"}` };
    case "launched":
      return { detail: [e.pid ? `pid ${e.pid}` : "", `terminal ${e.terminal}`].filter(Boolean).join(", ") };
    case "exited":
      return { detail: e.signal ? `signal ${e.signal}` : `code ${e.code}` };
    case "restarted":
    case "fenced":
    case "retired":
      return { detail: e.reason };
    case "run":
      return { detail: `run ${e.status}` };
    default:
      return {};
  }
}

function reason(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

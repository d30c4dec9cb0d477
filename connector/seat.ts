// A seat's session on the mesh: its endpoint, its bounded inbox, and what the agent's state is
// (turn, attention, channel modes, presence). It joins once (on first use), consumes deliveries
// into the inbox, keeps held mail alive on the broker, publishes presence and the unread count,
// and rings the doorbell through `ring`. Hooks and tools act on the seat; neither reaches past it.
import os from "node:os";
import { setImmediate as afterIo } from "node:timers/promises";
import type { z } from "zod";
import { Endpoint, logger, type BoundedSet, type Delivery, type Logger, type PresencePatch, type Receipt, type Roster } from "../broker/index.js";
import { callControl, controlCaller } from "../broker/index.js";
import { ApprovalDesk, folderPerson } from "./approvals.js";
import { MANAGER_COMMANDS, principal, principalId, type Attention, type ChannelMode, type Principal, type RunArgs, type RunReply } from "../schemas/index.js";
import { BacklogLatch, joinBacklog } from "./backlog.js";
import { seatClassifier } from "./classify.js";
import { keepAlivePeriod, type ConnectorConfig } from "./config.js";
import type { EventPlane } from "./event-plane.js";
import { credsMaySpawn, HelperDesk } from "./helpers.js";
import { Inbox, type Mail, type Selection } from "./inbox.js";
import type { SeatFacts } from "./model-text.js";
import type { TurnState } from "./presence.js";
import type { SeatApprovals } from "../runtime/index.js";
import { cliFacetOf } from "./cli-facet.js";
import { Waker, type Wake, type WakeView } from "./wake.js";

/** A snapshot for cotal_status and tests. */
export interface ConnectorStatus {
  id: string;
  space: string;
  role?: string;
  status: string;
  attention: Attention;
  activity?: string;
  condition?: string;
  channels: string[];
  channelModes: Record<string, ChannelMode>;
  inbox: ReturnType<Inbox["counts"]>;
  /** The event plane: off, or where it stands and how many frames wait in its WAL. */
  events: { status: "off" } | { status: EventPlane["status"]; backlog: number; haltReason?: string };
}

/** A channel as `cotal_channels` lists it. */
export interface ChannelListing {
  name: string;
  class: string;
  description?: string;
}

const callManager = controlCaller(MANAGER_COMMANDS);

/**
 * How long leaving waits for the event plane to publish what its WAL holds, ms. Claude sends its
 * MCP server SIGINT, SIGTERM 0.1 s later and SIGKILL about 0.5 s after the first (seen with
 * 2.1.332): whatever is not stored by then stays in the WAL for the next start.
 */
const PLANE_FLUSH_MS = 400;
/** The first pause before a failed join is tried again; it doubles up to JOIN_RETRY_MAX_MS. */
const JOIN_RETRY_MS = 1_000;
const JOIN_RETRY_MAX_MS = 15_000;

export class Seat {
  readonly me: Principal;
  readonly id: string;
  readonly inbox: Inbox;
  readonly turn: TurnState = { turnOpen: false, status: "idle" };
  private readonly waker: Waker;
  private readonly modes = new Map<string, ChannelMode>();
  private attention: Attention = "open";
  private presenceChain: Promise<void> = Promise.resolve();
  private keepAlive?: NodeJS.Timeout;
  private consuming?: Promise<void>;
  private readonly backlog: BacklogLatch;
  private activation?: Promise<void>;
  /** A failed join tried again by itself (an idle seat has no next caller): the timer, and the tries so far. */
  private rejoin?: NodeJS.Timeout;
  private joinFailures = 0;
  private leavingNow = false;
  /** The unread count last published in presence (-1: none yet; the join publishes the first). */
  private publishedUnread = -1;
  /** How often held durable mail is kept alive, ms (known once joined). */
  keepAliveMs = 0;
  /** Its helpers, when its credential carries the spawn right (cotal_spawn; docs/connector.md). */
  readonly helpers: HelperDesk | undefined;
  /** Its permission asks, answered over the mesh, when its CLI's permission hook takes a decision back. */
  readonly approvals: ApprovalDesk | undefined;
  /** The hook reply that hands a decision back to the seat's CLI (cli-facet.ts). */
  readonly permissionReply: SeatApprovals["reply"] | undefined;

  private constructor(
    private readonly cfg: ConnectorConfig,
    readonly ep: Endpoint,
    readonly log: Logger,
    /** Ids the previous incarnation held and gave back at shutdown (its session may have seen them). */
    private readonly heldBefore: BoundedSet<string>,
    ring: (w: Wake) => void,
    /** The event plane, started when the seat joins. */
    readonly plane: EventPlane | undefined,
  ) {
    this.me = ep.me;
    this.id = principalId(this.me);
    this.inbox = new Inbox(
      seatClassifier(this.me, (ch) => this.channelMode(ch)),
      cfg.inbox,
      (err, e) => this.log.warn({ err, id: e.id }, "settling a message failed; the broker will redeliver it"),
    );
    this.waker = new Waker(ring);
    this.helpers = credsMaySpawn(cfg.launch.creds, cfg.launch.space, this.me)
      ? new HelperDesk(ep.nc, cfg.launch.space, this.me, cfg.launch.manager)
      : undefined;
    this.backlog = new BacklogLatch(() => this.ep.deliveries.size);
    const { launch } = cfg;
    const asks = cliFacetOf(launch.runtime).approvals;
    this.permissionReply = asks?.reply;
    this.approvals =
      asks && (asks.sessions === "all" || cfg.managed)
        ? new ApprovalDesk({
            nc: ep.nc,
            space: launch.space,
            me: this.me,
            owner: launch.spawnedBy ?? (cfg.managed ? undefined : folderPerson(process.cwd(), launch.space)),
            managed: cfg.managed,
            timeoutMs: cfg.approvalTimeoutMs,
            plane,
            approveRight: async (who) => (await callControl(ep.nc, launch.space, "may-approve", this.me, { name: principalId(who) })).allowed,
            log: log.child({ component: "approvals" }),
          })
        : undefined;
  }

  /** The seat's logger (before it is connected: custody is claimed first). */
  static logger(cfg: ConnectorConfig): Logger {
    return logger("connector", { space: cfg.launch.space, me: principalId(principal(cfg.launch.owner, cfg.launch.name)) });
  }

  /** Connect the seat's endpoint (no presence, no pulls yet: see {@link activate}). */
  static async connect(
    cfg: ConnectorConfig,
    log: Logger,
    /** Read once connected (a failed connect leaves the previous incarnation's note for the next try). */
    heldBefore: () => BoundedSet<string>,
    ring: (w: Wake) => void,
    plane: (ep: Endpoint) => EventPlane | undefined,
  ): Promise<Seat> {
    const { launch } = cfg;
    const ep = await Endpoint.connect({
      server: launch.server,
      space: launch.space,
      name: launch.name,
      owner: launch.owner,
      ...(launch.role ? { role: launch.role } : {}),
      ...(launch.creds ? { creds: launch.creds } : {}),
      ...(launch.description ? { description: launch.description } : {}),
      ...(launch.tags ? { tags: launch.tags } : {}),
      kind: "agent",
      ...(launch.runtime ? { runtime: launch.runtime } : {}),
      meta: {
        ...(launch.meta ?? {}),
        connector: cliFacetOf(launch.runtime).meta,
        host: os.hostname(),
        cwd: process.cwd(),
        pid: String(process.pid),
      },
      ...(launch.uid ? { lifecycleUid: launch.uid } : {}),
      ...(cfg.heartbeatMs ? { heartbeatMs: cfg.heartbeatMs } : {}),
    });
    return new Seat(cfg, ep, log, heldBefore(), ring, plane(ep));
  }

  // ---- joining ------------------------------------------------------------------------------

  /** Whether the connector is leaving the mesh. */
  get leaving(): boolean {
    return this.leavingNow;
  }

  /** Whether the seat has joined (a session attached, or joinOn "start"). */
  get joined(): boolean {
    return this.activation !== undefined;
  }

  /**
   * Join the mesh and start consuming, once: on the first hook of the session or the first tool
   * call. A failed join (the mesh briefly unreachable: a cluster electing leaders, a node down) is
   * retried by the next caller, and by itself after a pause that doubles (1 s up to 15 s): an idle
   * seat has no next caller, and until it joins nobody can wake it for its mail.
   */
  activate(why: string): Promise<void> {
    if (this.leavingNow) return Promise.reject(new Error("the connector is leaving the mesh"));
    this.activation ??= this.join(why).then(
      () => {
        this.joinFailures = 0;
      },
      (err: unknown) => {
        this.activation = undefined;
        const pauseMs = Math.min(JOIN_RETRY_MS * 2 ** this.joinFailures, JOIN_RETRY_MAX_MS);
        this.joinFailures += 1;
        this.log.error({ err, why, retryInMs: pauseMs }, "joining the mesh failed; trying again");
        if (!this.rejoin && !this.leavingNow)
          this.rejoin = setTimeout(() => {
            this.rejoin = undefined;
            if (!this.leavingNow && !this.activation) this.activate(`${why}, tried again`).catch(() => undefined);
          }, pauseMs);
        throw err;
      },
    );
    return this.activation;
  }

  private async join(why: string): Promise<void> {
    const reg = await this.ep.join();
    this.approvals?.start();
    this.consuming = this.consume();
    this.plane?.start();
    for (const ch of this.cfg.launch.channels) {
      try {
        await this.ep.joinChannel(ch);
      } catch (err) {
        this.log.warn({ err, channel: ch }, "could not join a launch channel");
      }
    }
    const backlog = await joinBacklog(this.ep, this.cfg.launch.space, this.me, reg.dm);
    this.keepAliveMs = keepAlivePeriod(this.cfg, backlog.ackWaitMs);
    this.keepAlive = setInterval(() => {
      this.inbox.keepAlive();
      this.refreshUnread();
    }, this.keepAliveMs);
    this.keepAlive.unref();
    this.backlog.expect(backlog.messages, this.cfg.readyTimeoutMs);
    // Say the count once at join, 0 included: presence is written on change, and a seat whose
    // count never left 0 would otherwise never report one (readers show none then, not 0).
    this.refreshUnread();
    this.log.info({ why, backlog: backlog.messages, keepAliveMs: this.keepAliveMs, channels: this.ep.joinedChannels() }, "joined");
  }

  /**
   * Resolves once the seat joined and the backlog present at join reached the inbox (or the wait
   * timed out). Draining hooks wait for it, so a session's first context holds the mail that
   * waited for it.
   */
  ready(): Promise<void> {
    return this.backlog.ready;
  }

  private async consume(): Promise<void> {
    for await (const d of this.ep.deliveries) {
      this.accept(d);
      this.backlog.delivered(d.source);
    }
  }

  private accept(d: Delivery): void {
    // Held by the previous incarnation of this seat (and given back at its shutdown): possibly seen.
    const mail: Mail = this.heldBefore.delete(d.message.id) && !d.possibleRepeat ? { ...d, possibleRepeat: true } : d;
    const { entry, evicted } = this.inbox.add(mail);
    for (const ev of evicted) this.log.debug({ id: ev.entry.id, cls: ev.entry.cls, action: ev.action }, "inbox full: evicted");
    if (evicted.length) this.log.info({ evicted: evicted.length, size: this.inbox.size }, "inbox over capacity");
    if (entry) this.waker.arrived(entry, this.wakeView());
    this.refreshUnread();
  }

  // ---- unread and wake ------------------------------------------------------------------------

  /** Mail the agent has not been shown yet: free directed and channel entries, plus directed mail the broker holds back. */
  unread(): number {
    let n = this.inbox.returnedCount;
    for (const e of this.inbox.entries()) if (e.cls !== "pull" && e.handover === undefined && !(e.partsSent ?? 0)) n += 1;
    return n;
  }

  /** Publish the unread count in presence when it changed (coalesced through the presence chain). */
  refreshUnread(): void {
    if (!this.joined || this.leavingNow) return;
    const n = this.unread();
    if (n === this.publishedUnread) return;
    this.publishedUnread = n;
    void this.setPresence({ unread: n });
  }

  private wakeView(): WakeView {
    const free = () => this.inbox.entries().filter((e) => e.handover === undefined && !(e.partsSent ?? 0));
    return {
      attention: this.attention,
      turnOpen: this.turn.turnOpen,
      modeOf: (ch) => this.channelMode(ch),
      directedWaiting: () => free().filter((e) => e.cls === "directed"),
      channelWaiting: () => free().filter((e) => e.cls === "channel"),
      me: this.id,
    };
  }

  /** The session went idle (Stop, StopFailure): one wake for what waited through the turn. */
  wentIdle(): void {
    this.waker.idle(this.wakeView());
  }

  /** Mail was handed over (a hook drained it, or a cotal_inbox window was taken). */
  answered(): void {
    this.waker.answered();
    this.refreshUnread();
  }

  // ---- presence, attention, channel modes ------------------------------------------------------

  /**
   * Apply a presence change. Changes apply in order, each once the one before it was written
   * (latest wins); one that changes nothing is not written, and progress alone goes with the next
   * beat (Endpoint.reportPresence). Each starts after the I/O at hand: the reply of the hook that
   * implied it goes out first, its answer never waits on the write. Leaving waits for them all.
   */
  setPresence(patch: PresencePatch): Promise<void> {
    if (patch.status) this.turn.status = patch.status;
    this.presenceChain = this.presenceChain
      .then(() => afterIo())
      .then(() => this.ep.reportPresence(patch))
      .catch((err) => this.log.warn({ err }, "presence write failed"));
    return this.presenceChain;
  }

  /** Set attention (open, focus, dnd): what may wake the session. Reset to open at SessionStart. */
  setAttention(a: Attention): Promise<void> {
    this.attention = a;
    return this.setPresence({ attention: a });
  }

  /** Set how a channel reaches the agent (normal, quiet, muted); held mail is re-classified. */
  setChannelMode(channel: string, mode: ChannelMode): Promise<void> {
    if (mode === "normal") this.modes.delete(channel);
    else this.modes.set(channel, mode);
    this.inbox.reclassify();
    return this.setPresence({ channelModes: { [channel]: mode } });
  }

  /** A new (or cleared, resumed, compacted) session: attention open, every channel normal, with `patch`. */
  resetForSession(patch: PresencePatch | undefined): void {
    this.attention = "open";
    const reset: Record<string, ChannelMode> = {};
    for (const ch of this.modes.keys()) reset[ch] = "normal";
    this.modes.clear();
    this.inbox.reclassify();
    void this.setPresence({ ...(patch ?? {}), attention: "open", ...(Object.keys(reset).length ? { channelModes: reset } : {}) });
  }

  /** This agent's mode for a channel. */
  channelMode(channel: string): ChannelMode {
    return this.modes.get(channel) ?? "normal";
  }

  /** Record facts the session reports (the card's reserved meta keys) when they changed. */
  noteSessionFacts(facts: Record<string, string>): void {
    if (Object.entries(facts).some(([k, v]) => this.ep.cardMeta[k] !== v)) this.ep.setCardMeta(facts);
  }

  // ---- what the tools do ------------------------------------------------------------------------

  /** Who this seat is, for identity lines (the launch channels until joined). */
  facts(): SeatFacts {
    const { launch } = this.cfg;
    return {
      id: this.id,
      space: launch.space,
      ...(launch.role ? { role: launch.role } : {}),
      channels: this.joined ? this.ep.joinedChannels() : launch.channels,
    };
  }

  send(channel: string, text: string, mentions?: string[]): Promise<Receipt> {
    return this.ep.send(channel, text, mentions?.length ? { mentions } : {});
  }

  dm(to: string, text: string): Promise<Receipt> {
    return this.ep.dm(to, text);
  }

  anycast(role: string, text: string): Promise<Receipt> {
    return this.ep.anycast(role, text);
  }

  roster(): Promise<Roster> {
    return this.ep.roster();
  }

  /**
   * A `cotal_inbox` window within the configured budget. When it hands mail over, the doorbell
   * counts as answered; the caller acks it once its reply is written.
   */
  takeWindow(): { sel: Selection; returned: number } {
    const sel = this.inbox.window(this.cfg.windowBudget, this.cfg.windowMaxMessages);
    if (sel.handover) this.answered();
    return { sel, returned: this.inbox.returnedCount };
  }

  /** Characters one tool reply may carry (`cotal_inbox`, `cotal_history`). */
  get replyBudget(): number {
    return this.cfg.windowBudget;
  }

  joinedChannels(): string[] {
    return this.ep.joinedChannels();
  }

  /** Join a channel; returns its class, the posts backfilled into the inbox and its configured notes. */
  async joinChannel(channel: string): Promise<{ durable: boolean; backfilled: number; notes: string[] }> {
    const r = await this.ep.joinChannel(channel);
    const { config } = await this.ep.channels.get(channel);
    return { durable: r.class === "durable", backfilled: r.backfilled, notes: [config.description, config.instructions].filter((x): x is string => !!x) };
  }

  /** Leave a channel; its mode (if any) is forgotten. */
  async leaveChannel(channel: string): Promise<void> {
    await this.ep.leaveChannel(channel);
    if (this.modes.has(channel)) await this.setChannelMode(channel, "normal");
  }

  /** The configured channels and the joined ones, sorted by name. */
  async listChannels(): Promise<ChannelListing[]> {
    const configured = await this.ep.listChannels();
    const all = new Set([...configured.map((r) => r.name), ...this.ep.joinedChannels()]);
    const out: ChannelListing[] = [];
    for (const name of [...all].sort()) {
      const r = configured.find((x) => x.name === name) ?? (await this.ep.channels.get(name));
      out.push({ name, class: r.config.class, ...(r.config.description ? { description: r.config.description } : {}) });
    }
    return out;
  }

  history(channel: string, sinceMs: number, limit: number): ReturnType<Endpoint["history"]> {
    return this.ep.history(channel, { sinceMs, limit });
  }

  /** Dispatch runs on the space's manager as this seat (docs/runs.md). */
  run(args: z.input<typeof RunArgs>, timeoutMs: number): Promise<RunReply> {
    return callManager(this.ep.nc, this.cfg.launch.space, "run", this.ep.me, args, { timeoutMs });
  }

  /** Who and how this seat is right now, with inbox counts. */
  status(): ConnectorStatus {
    const p = this.ep.presence;
    const plane = this.plane;
    return {
      id: this.id,
      space: this.cfg.launch.space,
      ...(this.cfg.launch.role ? { role: this.cfg.launch.role } : {}),
      status: p.status,
      attention: this.attention,
      ...(p.activity ? { activity: p.activity } : {}),
      ...(p.condition ? { condition: p.condition.code } : {}),
      channels: this.ep.joinedChannels(),
      channelModes: Object.fromEntries(this.modes),
      inbox: this.inbox.counts(),
      events: plane ? { status: plane.status, backlog: plane.backlog, ...(plane.haltReason ? { haltReason: plane.haltReason } : {}) } : { status: "off" },
    };
  }

  // ---- leaving ---------------------------------------------------------------------------------

  /** Stop waking and publishing: the connector is leaving (before its hook socket closes). */
  beginLeaving(): void {
    this.leavingNow = true;
    if (this.keepAlive) clearInterval(this.keepAlive);
    if (this.rejoin) clearTimeout(this.rejoin);
  }

  /**
   * Leave: stop pulling, give held mail back to the broker (nak without delay; its ids go to
   * `noteReturned` for the next incarnation), write offline presence and close the connection.
   * Pulls stop first: a nak while our pull is still open would be redelivered straight back to
   * it, where it would sit until the ack wait ran out instead of reaching the next incarnation.
   * A seat that never joined (a health check) only closes its connection: no presence, no mail.
   */
  async leave(noteReturned: (ids: string[]) => void): Promise<void> {
    this.beginLeaving();
    this.approvals?.stop();
    await this.activation?.catch(() => undefined);
    // The plane's flush runs beside the mail's return: Claude kills its MCP server about half a
    // second after SIGINT, and both the session's last frames (the turn's end) and the held mail
    // must be out by then. Both need the connection, which closes after them.
    const plane = this.plane?.close(PLANE_FLUSH_MS).catch((err: unknown) => this.log.warn({ err }, "closing the event plane failed"));
    await this.presenceChain;
    // The pulls drop their inboxes once the server confirmed them, and the flush puts those
    // unsubscribes on the server before the naks below.
    this.ep.stopConsuming();
    await this.ep.pullsReleased();
    await this.ep.nc.flush().catch(() => undefined);
    await this.consuming?.catch(() => undefined); // what was already delivered is in the inbox
    try {
      noteReturned(this.inbox.durableIds());
    } catch (err) {
      this.log.warn({ err }, "could not note the returned mail for the next incarnation");
    }
    const returned = this.inbox.returnAll();
    if (returned) this.log.info({ returned }, "held mail returned to the broker");
    await plane;
    await this.ep.leave().catch((err) => this.log.warn({ err }, "leaving the mesh failed"));
    await this.ep.close().catch((err) => this.log.warn({ err }, "closing the mesh connection failed"));
  }

  /** Close the connection of a seat whose start failed. */
  abort(): Promise<void> {
    return this.ep.close().catch(() => undefined);
  }
}

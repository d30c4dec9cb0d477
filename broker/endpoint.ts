import { randomUUID } from "node:crypto";
import { jetstream, type JetStreamClient, type JsMsg } from "@nats-io/jetstream";
import { Kvm, type KV } from "@nats-io/kv";
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import {
  AgentCard,
  anycastSubject,
  COTAL_PROTOCOL_VERSION,
  assertChannel,
  assertToken,
  postSubject,
  CotalError,
  dmSubject,
  filters,
  LIMITS,
  names,
  parsePrincipal,
  beatSubject,
  PRESENCE,
  principal,
  principalId,
  type CONTROL_COMMANDS,
  type ControlCommand,
  type ControlReplyData,
  type ChannelClass,
  type CardKind,
  type CotalMessage,
  type Part,
  type Presence,
  type PresenceBeat,
  type PresenceStatus,
  type Principal,
  type Skill,
} from "../schemas/index.js";
import { inboxPrefix } from "./auth/permissions.js";
import { ChannelRegistry } from "./channel-registry.js";
import { connectMesh, type MeshAddress } from "./connect.js";
import { jetStreamConnection, JS_OPTIONS } from "./js-access.js";
import { callControl, type ControlCallRest } from "./control.js";
import { DeliveryQueue, IdLedger, type Delivery, type DeliverySource } from "./delivery.js";
import { JoinFailedError, NotJoinedError, PermissionDeniedError, UnknownMentionError } from "./errors.js";
import { collectHistory, verifiedName, type HistoryItem, type HistoryQuery } from "./history.js";
import { permissionViolation } from "./js-errors.js";
import { publishStored } from "./stored-publish.js";
import { logger, type Logger } from "./log.js";
import { AckBatcher } from "./ack-batch.js";
import type { RegisterReply } from "./mesh-service.js";
import { DurableReader, type ConsumerStatus } from "./durable-reader.js";
import { nextPresence, presenceChange, type PresencePatch, type PresenceState } from "./presence-state.js";
import { followPresence, Roster } from "./roster.js";
import type { ResolvedChannel } from "./channel-registry.js";
import { verifyEnvelope, type VerifiedMessage } from "./verify.js";

/** How to reach the mesh and who this endpoint is. */
export interface EndpointOptions extends MeshAddress {
  space: string;
  /** The actor name; the principal is `<owner>.<name>`. */
  name: string;
  /** Owner token; `local` on open and static meshes. */
  owner?: string;
  /** A role makes this endpoint a holder of anycasts to it. */
  role?: string;
  description?: string;
  tags?: string[];
  /** Card `meta`: free-form facts; use the reserved keys (RESERVED_META_KEYS) for what they name. */
  meta?: Record<string, string>;
  /** Card kind: `agent` for a model-driven seat, `endpoint` (the default) for any other program. */
  kind?: CardKind;
  /** Card `runtime`: the agent CLI this seat runs (`claude`, `codex`, `echo`, …), as its launch says. */
  runtime?: string;
  skills?: Skill[];
  /** The seat incarnation, written in presence as `lifecycleUid`. */
  lifecycleUid?: string;
  /** Liveness beat period, ms (default PRESENCE.heartbeatMs); the beat goes to the mesh service only. */
  heartbeatMs?: number;
  /** How long a send keeps retrying an unacknowledged publish, ms (default PUBLISH.totalTimeoutMs). */
  publishTimeoutMs?: number;
  /**
   * Waits before each attempt to re-create a durable consumer that stopped, ms (default
   * REESTABLISH_DELAYS_MS in schemas/limits.ts); after the last failed attempt it is reported `lost`
   * and tried again at the last delay until it binds.
   */
  reestablishDelaysMs?: readonly number[];
  /** How long a quiet pull waits before it is renewed (default DELIVERY.quietPullExpiresMs; a test shortens it). */
  quietPullExpiresMs?: number;
  /**
   * Who really acts through this endpoint when it is not `name` (the operator's credential acting
   * for a person): every message says so in `sentBy`, and the presence card in `meta.sentBy`.
   */
  impersonatedBy?: string;
  /**
   * Read every channel live (a core subscription, after the replay window's history), a durable
   * one too: for a credential that may read every channel but holds no memberships (a person's,
   * docs/security.md). Posts while it is away are read by history.
   */
  liveChannels?: boolean;
}

/** Content of a message: plain text, or parts. */
export type Content = string | Part[];

/** Optional envelope fields of a send. */
export interface SendOptions {
  mentions?: string[];
  replyTo?: string;
  contextId?: string;
  /** Reuse an id (republishing the same id dedupes on the broker). */
  id?: string;
}

/** An honest receipt: what the broker stored, and what we knew of the recipient at send. */
export interface Receipt {
  id: string;
  stream: string;
  seq: number;
  /** The broker had already stored this id (a republish). */
  duplicate: boolean;
  /** Who it was for and what was known of them at send (never "delivered"). The CLI and the connector word it. */
  target: ReceiptTarget;
}

/**
 * A receipt's addressee and what the roster said at send. `null` counts and `unknown`: the mesh
 * service did not answer (the message is stored all the same).
 */
export type ReceiptTarget =
  | { kind: "channel"; channel: string; /** Other members of the channel online at send. */ onlineMembers: number | null }
  | { kind: "dm"; /** The recipient's principal id. */ to: string; recipient: PresenceStatus | "not-joined" | "unknown" }
  | { kind: "anycast"; role: string; /** Holders of the role online at send. */ holders: number | null };

interface ChannelMembership {
  channel: string;
  class: ChannelClass;
  stop: () => void;
}

/** How long a send's receipt waits for the mesh service (the recipient's inbox and status), ms; the message is stored before. */
const RECEIPT_WAIT_MS = 1_500;

/**
 * The endpoint client: every component's way onto the mesh. Publishes are JetStream
 * publishes with `Nats-Msg-Id = id`; receipts say "stored", never "delivered". Received
 * messages arrive on `deliveries`, sender and kind taken from the subject.
 */
export class Endpoint {
  readonly me: Principal;
  readonly id: string;
  /** Everything addressed to or subscribed by this endpoint, in arrival order. */
  readonly deliveries = new DeliveryQueue();
  readonly channels: ChannelRegistry;
  private readonly js: JetStreamClient;
  /** The connection JetStream handles of this endpoint use (see jetStreamConnection). */
  readonly jsConnection: NatsConnection;
  private readonly ledger = new IdLedger();
  /** Delivery acks, confirmed by the broker one batch at a time. */
  private readonly acks: AckBatcher;
  private readonly memberships = new Map<string, ChannelMembership>();
  private rosterView?: Roster;
  /** The roster view being loaded (first use), shared by every caller until it is ready. */
  private rosterLoading: Promise<Roster> | undefined;
  /** The presence record this endpoint wrote last (what its beats carry). */
  private lastPresence?: Presence;
  /** Something changed that is not written yet (a failed write, new card meta): the next beat writes it. */
  private presenceDirty = false;
  private heartbeat?: NodeJS.Timeout;
  private joined = false;
  private registration: RegisterReply | undefined;
  private joining: Promise<RegisterReply> | undefined;
  /** The durable consumers it reads (DM inbox, role queue, channel memberships) and their pulls. */
  private readonly durables: DurableReader;
  /** Recipients whose inbox exists (an inbox, once created, stays): saves a lookup per DM. */
  private readonly registered = new Set<string>();
  private presenceState: PresenceState = { status: "idle", attention: "open", channelModes: {} };
  private card: AgentCard;
  private since = Date.now();

  private constructor(
    readonly nc: NatsConnection,
    readonly space: string,
    private readonly opts: EndpointOptions,
    private readonly presenceKv: KV,
    channelsKv: KV,
    readonly log: Logger,
  ) {
    assertToken("space", "space", space);
    this.me = principal(opts.owner ?? "local", opts.name);
    this.id = principalId(this.me);
    if (opts.role) assertToken("name", "role", opts.role);
    this.jsConnection = jetStreamConnection(nc, opts.creds);
    this.acks = new AckBatcher(nc);
    this.js = jetstream(this.jsConnection, JS_OPTIONS);
    this.durables = new DurableReader(nc, this.js, log, opts, (m) => this.onDurable(m));
    this.watchRefusals();
    this.channels = new ChannelRegistry(channelsKv);
    this.card = AgentCard.parse({
      id: this.id,
      name: opts.name,
      kind: opts.kind ?? "endpoint",
      owner: this.me.owner,
      actor: this.me.actor,
      ...(opts.role ? { role: opts.role } : {}),
      ...(opts.description ? { description: opts.description } : {}),
      tags: opts.tags ?? [],
      ...(opts.skills?.length ? { skills: opts.skills } : {}),
      meta: { ...opts.meta, ...(opts.impersonatedBy ? { sentBy: opts.impersonatedBy } : {}) },
      protocolVersion: COTAL_PROTOCOL_VERSION,
      ...(opts.runtime ? { runtime: opts.runtime } : {}),
    });
  }

  /**
   * The broker reports a refused publish or subscribe asynchronously on the connection's
   * status: log each as a typed error and remember it, so binding a consumer can tell that its
   * pull was refused instead of waiting for messages that never come.
   */
  private watchRefusals(): void {
    void (async () => {
      for await (const s of this.nc.status()) {
        // Back after a disconnect: the mesh service may have taken this key offline meanwhile.
        if (s.type === "reconnect") this.durables.repull();
        if (s.type === "reconnect" && this.joined) void this.writePresence().catch((err) => this.log.warn({ err }, "presence write after a reconnect failed"));
        if (s.type !== "error") continue;
        const pv = permissionViolation(s.error);
        if (!pv) continue;
        const err = new PermissionDeniedError(pv.operation === "subscription" ? "subscribe" : "publish", pv.subject, pv);
        this.durables.noteRefusal(pv.subject, err);
        this.log.error({ err, subject: pv.subject }, "the broker refused an operation of this endpoint");
      }
    })().catch((err) => this.log.debug({ err }, "connection status watch ended"));
  }

  /** Connect to the mesh as `name` (does not join: call join() to appear on the roster). */
  static async connect(opts: EndpointOptions): Promise<Endpoint> {
    principal(opts.owner ?? "local", opts.name); // refuse bad names before connecting
    // A person's credential (or the operator's, acting for someone) replies on its own inbox prefix.
    const nc = await connectMesh({
      ...opts,
      name: opts.name,
      ...(opts.creds ? {} : { inboxPrefix: inboxPrefix(principal(opts.owner ?? "local", opts.name)) }),
    });
    return Endpoint.over(nc, opts);
  }

  /** An endpoint over an existing connection (it does not own the connection). */
  static async over(nc: NatsConnection, opts: EndpointOptions): Promise<Endpoint> {
    const kvm = new Kvm(jetstream(jetStreamConnection(nc, opts.creds), JS_OPTIONS));
    const open = (name: string) => kvm.open(name, { bindOnly: true });
    const [presence, channels] = await Promise.all([open(names.presenceBucket(opts.space)), open(names.channelsBucket(opts.space))]);
    const log = logger("endpoint", { space: opts.space, me: `${opts.owner ?? "local"}.${opts.name}` });
    return new Endpoint(nc, opts.space, opts, presence, channels, log);
  }

  /**
   * Join the mesh: the mesh service creates (once) this name's DM inbox, holding every DM
   * already stored for it, and its role queue; presence starts beating; DMs and anycasts
   * start arriving on `deliveries`. Resolves only once the inbox (and role queue) consumers
   * are bound and consuming. On failure nothing is left behind (heartbeat stopped, consumers
   * and roster subscription removed, an offline presence record written) and it throws: the
   * mesh service's own typed error (MeshServiceUnavailableError, PermissionDeniedError,
   * ControlCallError…) or a JoinFailedError naming the step and its cause.
   */
  join(): Promise<RegisterReply> {
    if (this.registration) return Promise.resolve(this.registration);
    this.joining ??= this.joinOnce().finally(() => (this.joining = undefined));
    return this.joining;
  }

  private async joinOnce(): Promise<RegisterReply> {
    const roleArgs = this.opts.role ? { role: this.opts.role } : {};
    const hadRoster = this.rosterView !== undefined;
    let step = "registering with the mesh service";
    try {
      const reply = await this.mesh("register", roleArgs);
      this.joined = true;
      this.since = Date.now();
      this.presenceState = { ...this.presenceState, statusSince: this.since };
      step = "writing presence";
      await this.writePresence();
      const beat = setInterval(() => this.beat(), this.opts.heartbeatMs ?? PRESENCE.heartbeatMs);
      beat.unref();
      this.heartbeat = beat;
      step = "loading the roster";
      await this.roster();
      step = `binding the DM inbox ${reply.dm}`;
      await this.durables.consume(names.dmStream(this.space), reply.dm, async () => (await this.mesh("register", roleArgs)).dm);
      if (reply.anycast) {
        step = `binding the role queue ${reply.anycast}`;
        await this.durables.consume(names.taskStream(this.space), reply.anycast, async () => (await this.mesh("register", roleArgs)).anycast ?? reply.anycast!);
      }
      this.registration = reply;
      return reply;
    } catch (err) {
      await this.undoJoin(hadRoster);
      const failure = err instanceof CotalError ? err : new JoinFailedError(step, err);
      this.log.error({ err: failure, step }, "join failed; undone");
      throw failure;
    }
  }

  /** Undo a join that did not complete: stop beating, stop consumers, leave the roster. */
  private async undoJoin(keepRoster: boolean): Promise<void> {
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = undefined;
    this.durables.stopAll();
    if (!keepRoster) {
      this.rosterView?.stop();
      this.rosterView = undefined;
    }
    if (this.joined) {
      this.joined = false;
      await this.writePresence("offline").catch((err) => this.log.warn({ err }, "offline presence write after a failed join failed"));
    }
  }

  /** The durable consumers this endpoint reads, and whether each still delivers. */
  consumerStatus(): ConsumerStatus[] {
    return this.durables.status();
  }

  /** Hear every change of a consumer's status (e.g. to show `lost` to a person). */
  onConsumerStatus(listener: (s: ConsumerStatus) => void): () => void {
    return this.durables.onStatus(listener);
  }

  /** Leave gracefully: a final offline record, consumers stopped, deliveries closed. */
  async leave(): Promise<void> {
    if (!this.joined) return;
    this.stopConsuming();
    this.joined = false;
    this.registration = undefined;
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.presenceState = { ...this.presenceState, status: "offline", statusSince: Date.now() };
    // A closed connection cannot say goodbye: the mesh service takes the key offline after the window.
    if (!this.nc.isClosed()) await this.writePresence().catch((err) => this.log.warn({ err }, "final presence write failed"));
    this.deliveries.close();
  }

  /**
   * Stop every pull and live subscription, still joined (presence unchanged). A seat shutting
   * down calls this first, then hands back what it holds, then leaves: handed-back mail can then
   * only go to the next incarnation, never back to this one's still-open pull.
   */
  stopConsuming(): void {
    for (const m of this.memberships.values()) m.stop();
    this.memberships.clear();
    this.durables.stopAll();
    this.deliveries.close(); // what is already queued still drains
  }

  /**
   * Settles once every pull stopConsuming() stopped has dropped its inbox (broker/quiet-pull.ts):
   * mail handed back after it cannot be redelivered to this endpoint.
   */
  async pullsReleased(): Promise<void> {
    await this.durables.released();
  }

  /** Leave (if joined) and close the connection. */
  async close(): Promise<void> {
    await this.leave();
    this.rosterView?.stop();
    // A pull the server has not registered yet must not outlive its inbox (broker/quiet-pull.ts).
    await this.pullsReleased();
    if (!this.nc.isClosed()) await this.nc.drain().catch(() => this.nc.close());
  }

  /** Update this endpoint's presence (written at once; heartbeats only carry it to the mesh service). */
  async setPresence(patch: PresencePatch): Promise<void> {
    this.presenceState = nextPresence(this.presenceState, patch, Date.now());
    if (this.joined || this.presenceState.status === "offline") await this.writePresence();
  }

  /**
   * Apply a change a live session reports (a hook, a tool call): written at once when the record
   * changes, not at all when nothing did, and with the next beat when only `activeAt` moved (a
   * session's repeated tool calls cost no write each; the record carries their progress at most a
   * heartbeat late, and leaving writes it too).
   */
  async reportPresence(patch: PresencePatch): Promise<void> {
    const prev = this.presenceState;
    this.presenceState = nextPresence(prev, patch, Date.now());
    if (!this.joined && this.presenceState.status !== "offline") return;
    const change = presenceChange(prev, this.presenceState);
    if (change === "progress") this.presenceDirty = true;
    else if (change === "record") await this.writePresence();
  }

  /** The card's `meta` as written. */
  get cardMeta(): Readonly<Record<string, string>> {
    return this.card.meta;
  }

  /** Add facts to the card's `meta` (e.g. `sessionId` once a session is known); written with the next heartbeat. */
  setCardMeta(meta: Record<string, string>): void {
    this.card = AgentCard.parse({ ...this.card, meta: { ...this.card.meta, ...meta } });
    this.presenceDirty = true;
  }

  /** This endpoint's current presence fields. */
  get presence(): Readonly<typeof this.presenceState> {
    return this.presenceState;
  }

  private async writePresence(status?: PresenceStatus): Promise<void> {
    const record: Presence = {
      card: this.card,
      ...this.presenceState,
      ...(status && status !== this.presenceState.status ? { status, statusSince: Date.now() } : {}),
      ...(this.opts.lifecycleUid ? { lifecycleUid: this.opts.lifecycleUid } : {}),
      channels: [...this.memberships.keys()],
      ts: Date.now(),
      since: this.since,
    };
    // Our own view shows our own latest state at once: not after the write comes back around, nor
    // after the broker's ack (a tool reading the roster right after a hook must see its activity).
    this.rosterView?.update(this.id, record);
    // Owed from here on only what changes after this record was built (progress noted while it is
    // in flight is not in it).
    this.presenceDirty = false;
    try {
      await this.presenceKv.put(this.id, JSON.stringify(record));
    } catch (err) {
      this.presenceDirty = true; // the next beat writes it again
      throw err;
    }
    this.lastPresence = record;
  }

  /**
   * One heartbeat: a beat on this endpoint's beat subject, which only the mesh service reads (no
   * other endpoint receives it: presence costs O(n), not n²), carrying the record as last written.
   * The record itself goes to the bucket only when it changed or a write is owed.
   */
  private beat(): void {
    if (this.nc.isClosed()) {
      // Killed or closed under us: nothing more to say (the mesh service will judge us gone).
      if (this.heartbeat) clearInterval(this.heartbeat);
      this.heartbeat = undefined;
      return;
    }
    if (this.presenceDirty || !this.lastPresence) {
      void this.writePresence().catch((err) => this.log.warn({ err }, "presence write failed; the next beat tries again"));
      return;
    }
    const beat: PresenceBeat = { ts: Date.now(), presence: this.lastPresence };
    try {
      this.nc.publish(beatSubject(this.space, this.me), JSON.stringify(beat));
    } catch (err) {
      this.log.warn({ err }, "beat not sent");
    }
  }

  /**
   * The live roster view (started on first use): a snapshot from the mesh service, then every
   * presence write as it is published. Needs no consumer of its own.
   */
  async roster(): Promise<Roster> {
    if (this.rosterView) return this.rosterView;
    // One load at a time: a receipt that stopped waiting for it must not start another.
    this.rosterLoading ??= this.loadRoster().finally(() => (this.rosterLoading = undefined));
    return this.rosterLoading;
  }

  private async loadRoster(): Promise<Roster> {
    const view = new Roster(this.log);
    try {
      await followPresence(this.nc, this.space, view, (after) => this.mesh("roster", after ? { after } : {}));
    } catch (err) {
      view.stop();
      throw err;
    }
    // Our key missing or offline in the snapshot while we are joined: taken offline between our
    // join's write and this view (a slow first beat under load), or written before it landed.
    // Writing it again puts us back for every watcher, and in our own view at once.
    const mine = view.get(this.id);
    if (this.joined && this.presenceState.status !== "offline" && (!mine || mine.status === "offline"))
      void this.writePresence().catch((err) => this.log.warn({ err }, "presence write after a snapshot without our key failed"));
    // The mesh service deleted our key (it heard no beat for the liveness window, or the
    // write raced its judgement) while we live: writing it again is the way back online.
    view.onRemove((id) => {
      if (id === this.id && this.joined)
        void this.writePresence().catch((err) => this.log.warn({ err }, "presence write after our key was taken offline failed"));
    });
    // Someone else wrote our key offline while we live: the goodbye of a predecessor we took over
    // from (listen --takeover), landing after our join. Records are written on change only, so
    // no heartbeat would undo it: writing ours again is the way back online.
    view.onChange(() => {
      const seen = view.get(this.id)?.presence;
      // (Not when we say offline ourselves: a seat may, while joined; that is no one else's write.)
      if (this.joined && this.presenceState.status !== "offline" && seen?.status === "offline" && seen.ts !== this.lastPresence?.ts)
        void this.writePresence().catch((err) => this.log.warn({ err }, "presence write after another wrote our key offline failed"));
    });
    // Static meshes: someone who appears after the snapshot shows a role only once the mesh
    // service said which role their credential holds.
    const asking = new Set<string>();
    const verify = () => {
      for (const id of view.unverifiedRoles()) {
        if (asking.has(id)) continue;
        asking.add(id);
        void this.mesh("lookup", { name: id })
          .then((r) => r.registeredRole !== undefined && view.setRegisteredRole(id, r.registeredRole))
          .catch((err) => this.log.debug({ err, id }, "could not look up a registered role"))
          .finally(() => asking.delete(id));
      }
    };
    view.onChange(verify);
    verify();
    this.rosterView = view;
    return view;
  }

  /**
   * Who reads channels through the mesh service (history, memberships): the operator acting for
   * a person (`--impersonate`) reads with its own right, as it may read everything; the person's
   * name may be one this mesh never minted, which may read nothing.
   */
  private get reader(): Principal {
    return this.opts.impersonatedBy ? parsePrincipal(this.opts.impersonatedBy) : this.me;
  }

  /** This endpoint's durable membership of a channel (the operator asks for it by name when it acts for someone). */
  private joinMembership(channel: string): Promise<ControlReplyData<"join">> {
    if (!this.opts.impersonatedBy) return this.mesh("join", { channel });
    return callControl(this.nc, this.space, "join", this.reader, { channel, member: this.id });
  }

  /** Call the mesh service as this endpoint. */
  private mesh<C extends ControlCommand>(command: C, ...rest: ControlCallRest<typeof CONTROL_COMMANDS, C>): Promise<ControlReplyData<C>> {
    return callControl(this.nc, this.space, command, this.me, ...rest);
  }

  // ---- sending -------------------------------------------------------------------------

  /** Post on a channel. Mentions must name peers seen in the roster, or nothing is sent. */
  async send(channel: string, content: Content, opts: SendOptions = {}): Promise<Receipt> {
    assertChannel(channel);
    if (opts.mentions?.length) await this.checkMentions(opts.mentions);
    const m = this.envelope({ channel }, content, opts);
    const ack = await this.publish(postSubject(this.space, this.me, channel), m);
    const view = await this.rosterAfterStore();
    // Who could read it now: the channel's members (their presence lists it), not every endpoint online.
    const online = view ? view.onlineIn(channel, this.id) : null;
    return { ...ack, target: { kind: "channel", channel, onlineMembers: online } };
  }

  /**
   * Post `parts` on a channel and return only what the broker stored (no roster, no receipt
   * target): the event plane's writer, on its own plane's name `events.<owner>.<actor>` (stored on
   * the plane's subject in EVENTS_). With `expectLastSubjectSequence` the broker stores it only
   * if the last message on this sender's subject of the channel is at that stream sequence (0:
   * none yet); otherwise it refuses (`isWrongLastSequence`), so two writers cannot interleave.
   */
  async post(channel: string, parts: Part[], opts: { id: string; expectLastSubjectSequence?: number }): Promise<Omit<Receipt, "target">> {
    assertChannel(channel);
    const m = this.envelope({ channel }, parts, { id: opts.id });
    return this.publish(postSubject(this.space, this.me, channel), m, opts.expectLastSubjectSequence);
  }

  /** The largest payload the server accepts, bytes (its INFO), capped at the envelope limit. */
  get maxPayload(): number {
    return Math.min(this.nc.info?.max_payload ?? LIMITS.maxMessageBytes, LIMITS.maxMessageBytes);
  }

  /** Send a DM to `to` (an actor name, or `<owner>.<actor>`). */
  async dm(to: string, content: Content, opts: SendOptions = {}): Promise<Receipt> {
    const recipient = parsePrincipal(to);
    const toId = principalId(recipient);
    const m = this.envelope({ to: toId }, content, opts);
    const ack = await this.publish(dmSubject(this.space, recipient, this.me), m);
    let serviceSilent = false;
    // Online in our roster means joined, and a join creates the inbox first: no need to ask
    // (fifty seats answering one asker each asked the one mesh service, in turn).
    const seen = this.rosterView?.statusOf(toId);
    if (seen && seen !== "offline") this.registered.add(toId);
    if (!this.registered.has(toId)) {
      // Only the mesh service reads the members bucket; it says whether the inbox exists.
      const found = await this.mesh("lookup", { name: toId }, { timeoutMs: RECEIPT_WAIT_MS }).catch(() => {
        serviceSilent = true;
        return undefined;
      });
      if (found && !found.dm) {
        return { ...ack, target: { kind: "dm", to: toId, recipient: "not-joined" } };
      }
      if (found) this.registered.add(toId);
      // The lookup said the recipient's presence too: an endpoint without a roster (a one-shot
      // `cotal send dm`) needs none for this receipt, where it loaded a snapshot of everyone.
      if (found?.status && !this.rosterView) return { ...ack, target: { kind: "dm", to: toId, recipient: found.status } };
    }
    // A mesh service that did not answer the lookup would not answer the roster's snapshot either.
    const view = serviceSilent && !this.rosterView ? undefined : await this.rosterAfterStore();
    // One entry, not the whole sorted roster: a DM's receipt costs the same at 10 joined as at 200.
    const status = view ? (view.statusOf(toId) ?? "offline") : "unknown";
    return { ...ack, target: { kind: "dm", to: toId, recipient: status } };
  }

  /** Send to any one holder of `role`. */
  async anycast(role: string, content: Content, opts: SendOptions = {}): Promise<Receipt> {
    assertToken("name", "role", role);
    const m = this.envelope({ toService: role }, content, opts);
    const ack = await this.publish(anycastSubject(this.space, role, this.me), m);
    const entries = (await this.rosterAfterStore())?.entries();
    const holders = entries ? entries.filter((e) => e.role === role && e.status !== "offline").length : null;
    return { ...ack, target: { kind: "anycast", role, holders } };
  }

  /**
   * The roster for a receipt, after the message is already stored: a failure here must not
   * turn a stored message into an error (the sender would resend it).
   */
  private async rosterAfterStore(): Promise<Roster | undefined> {
    // Bounded: a mesh service that hangs (stopped, overloaded) would hold a message already
    // stored for the control call's whole timeout (10 s) only to say the recipient's status.
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<"late">((resolve) => (timer = setTimeout(() => resolve("late"), RECEIPT_WAIT_MS)));
    try {
      const view = await Promise.race([this.roster(), late]);
      if (view !== "late") return view;
      this.log.info({ waitedMs: RECEIPT_WAIT_MS }, "roster not ready for a receipt in time; the receipt says the status is unknown");
      return undefined;
    } catch (err) {
      this.log.info({ err: (err as Error).message }, "roster unavailable for a receipt; the receipt says the status is unknown");
      return undefined;
    } finally {
      clearTimeout(timer);
    }
  }

  private envelope(address: Pick<CotalMessage, "channel" | "to" | "toService">, content: Content, opts: SendOptions): CotalMessage {
    return {
      id: opts.id ?? randomUUID(),
      ts: Date.now(),
      space: this.space,
      from: { id: this.id, name: this.opts.name, ...(this.opts.role ? { role: this.opts.role } : {}) },
      ...address,
      ...(opts.mentions?.length ? { mentions: opts.mentions.map((n) => n.toLowerCase()) } : {}),
      parts: typeof content === "string" ? [{ kind: "text", text: content }] : content,
      ...(opts.replyTo ? { replyTo: opts.replyTo } : {}),
      ...(opts.contextId ? { contextId: opts.contextId } : {}),
      ...(this.opts.impersonatedBy ? { sentBy: this.opts.impersonatedBy } : {}),
    };
  }

  /** Publish with `Nats-Msg-Id = id`, retried with the same id until `publishTimeoutMs` (stored-publish.ts). */
  private publish(subject: string, m: CotalMessage, lastSubjectSequence?: number): Promise<Omit<Receipt, "target">> {
    return publishStored(this.js, subject, m, {
      timeoutMs: this.opts.publishTimeoutMs,
      lastSubjectSequence,
      stop: () => this.nc.isClosed(),
      log: this.log,
    });
  }

  private async checkMentions(mentions: string[]): Promise<void> {
    const roster = await this.roster();
    const entries = roster.entries();
    // Mentions go out lowercased, so a name matches whatever its case.
    const seen = (n: string) => entries.some((e) => e.name.toLowerCase() === n.toLowerCase() || e.id.toLowerCase() === n.toLowerCase());
    const unknown = mentions.filter((n) => !seen(n) && !roster.known(n));
    if (unknown.length) throw new UnknownMentionError(unknown);
  }

  // ---- channels ------------------------------------------------------------------------

  /**
   * Join a channel. Durable channels get a membership (created by the mesh service from the
   * join watermark) that holds posts while this endpoint is away; live channels a core
   * subscription. A new membership first backfills history inside the replay window, marked
   * `historical`, with the overlap deduped by id.
   */
  async joinChannel(channel: string): Promise<{ class: ChannelClass; backfilled: number }> {
    assertChannel(channel);
    if (!this.joined) throw new NotJoinedError(`join channel ${channel}`);
    const existing = this.memberships.get(channel);
    if (existing) return { class: existing.class, backfilled: 0 };
    const { config } = await this.channels.get(channel);
    const sinceMs = Date.now() - config.windowSeconds * 1000;
    let backfilled = 0;
    if (config.class === "durable" && !this.opts.liveChannels) {
      const reply = await this.joinMembership(channel);
      if (reply.created && config.replay) {
        backfilled = this.pushHistory(await this.readHistory(channel, { sinceMs, beforeSeq: reply.watermark }));
      }
      const stop = await this.durables
        .consume(names.chatStream(this.space), reply.durable, async () => (await this.joinMembership(channel)).durable)
        .catch((err: unknown) => {
          throw err instanceof CotalError ? err : new JoinFailedError(`binding the membership ${reply.durable} of channel ${channel}`, err);
        });
      this.memberships.set(channel, { channel, class: "durable", stop });
    } else {
      const buffered: VerifiedMessage[] = [];
      let live = false;
      let refused: PermissionDeniedError | undefined;
      const sub: Subscription = this.nc.subscribe(filters.channel(this.space, channel), {
        callback: (err, msg) => {
          if (err) {
            // Terminal for the subscription: a refusal (or the connection going away).
            const denied = permissionViolation(err);
            refused = denied ? new PermissionDeniedError("subscribe", denied.subject, err) : undefined;
            this.log.error({ err: refused ?? err, channel }, "live channel subscription ended");
            if (this.memberships.get(channel)?.class === "live") this.memberships.delete(channel);
            return;
          }
          const v = verifyEnvelope(msg.subject, msg.data, this.log);
          if (!v) return;
          if (live) this.pushLive(v);
          else buffered.push(v);
        },
      });
      try {
        await this.nc.flush(); // a refused SUB is answered before the PONG
        if (refused) throw refused;
        if (config.replay) backfilled = this.pushHistory(await this.readHistory(channel, { sinceMs }));
      } catch (err) {
        sub.unsubscribe();
        throw err;
      }
      for (const v of buffered) this.pushLive(v);
      live = true;
      this.memberships.set(channel, { channel, class: "live", stop: () => sub.unsubscribe() });
    }
    await this.writePresence();
    return { class: this.memberships.get(channel)?.class ?? config.class, backfilled };
  }

  /** Leave a channel; a durable membership is ended (its consumer deleted). */
  async leaveChannel(channel: string): Promise<void> {
    assertChannel(channel);
    const m = this.memberships.get(channel);
    if (m) {
      m.stop();
      this.memberships.delete(channel);
    }
    const { config } = await this.channels.get(channel);
    if (m?.class === "durable" || (config.class === "durable" && !this.opts.liveChannels)) {
      await this.mesh("leave", { channel });
    }
    if (this.joined) await this.writePresence();
  }

  /** Channels this endpoint is in. */
  joinedChannels(): string[] {
    return [...this.memberships.keys()];
  }

  /** Stored posts of a channel since `sinceMs`, oldest first; `limit` keeps the newest N. */
  history(channel: string, opts: { sinceMs?: number; limit?: number } = {}): Promise<HistoryItem[]> {
    assertChannel(channel);
    return this.readHistory(channel, opts);
  }

  /** Configured channels and their settings. */
  listChannels(): Promise<ResolvedChannel[]> {
    return this.mesh("channels");
  }

  /**
   * History is served by the mesh service (which enforces read scope), page by page. With
   * `limit`, later pages run to the current end, so the newest N are kept at the end.
   */
  private readHistory(channel: string, q: HistoryQuery): Promise<HistoryItem[]> {
    return collectHistory(channel, q, (args) => callControl(this.nc, this.space, "history", this.reader, args));
  }

  // ---- receiving -----------------------------------------------------------------------

  private pushHistory(items: HistoryItem[]): number {
    let n = 0;
    for (const h of items) {
      if (h.from.owner === this.me.owner && h.from.actor === this.me.actor) continue;
      if (this.ledger.isHeld(h.message.id) || this.ledger.isDone(h.message.id)) continue;
      this.handOver({ message: h.message, kind: "channel", from: h.from, channel: h.channel }, "history", false, undefined, h.seq);
      n += 1;
    }
    return n;
  }

  private pushLive(v: VerifiedMessage): void {
    if (principalId(v.from) === this.id) return;
    if (this.ledger.isHeld(v.message.id) || this.ledger.isDone(v.message.id)) return;
    this.handOver(v, "live", false);
  }

  private onDurable(m: JsMsg): void {
    const v = verifyEnvelope(m.subject, m.data, this.log);
    if (!v) {
      // No reason text: nats-server before 2.10 ignores "+TERM <reason>" (only a bare +TERM
      // terminates), so the message would come back after every ack wait, forever.
      m.term();
      return;
    }
    const id = v.message.id;
    if (this.ledger.isDone(id) || (v.kind === "channel" && principalId(v.from) === this.id)) {
      m.ack();
      return;
    }
    if (this.ledger.isHeld(id)) return; // the held copy's ack settles it
    this.handOver(v, "durable", m.info.redelivered, m, m.seq);
  }

  private handOver(v: VerifiedMessage, source: DeliverySource, redelivered: boolean, jsMsg?: JsMsg, seq?: number): void {
    const id = v.message.id;
    this.ledger.hold(id);
    const ledger = this.ledger;
    const log = this.log;
    const acks = this.acks;
    const delivery: Delivery = {
      // The name shown is the verified sender's actor: the payload's from.name is only a claim.
      message: verifiedName(v.message, v.from),
      kind: v.kind,
      from: v.from,
      ...(v.channel ? { channel: v.channel } : {}),
      ...(v.role ? { role: v.role } : {}),
      source,
      historical: source === "history",
      possibleRepeat: redelivered,
      ...(seq !== undefined ? { seq } : {}),
      async ack() {
        try {
          if (jsMsg) await acks.ack(jsMsg); // confirmed by the broker, in batches (ack-batch.ts)
        } finally {
          // Handled either way: a copy the broker hands out again is acked, not delivered twice
          // (onDurable). Left held, the copy would be ignored unacked at every ack wait, forever.
          ledger.settle(id);
        }
      },
      nak(delayMs?: number) {
        ledger.release(id);
        jsMsg?.nak(delayMs);
      },
      term(reason?: string) {
        ledger.settle(id);
        if (reason) log.debug({ id, reason }, "terminated a delivery");
        jsMsg?.term(); // a bare +TERM: see onDurable
      },
      working() {
        jsMsg?.working();
      },
    };
    if (!jsMsg) ledger.settle(id);
    this.deliveries.push(delivery);
  }
}

import { Kvm, type KV } from "@nats-io/kv";
import { AckPolicy, DeliverPolicy, jetstreamManager, type ConsumerConfig, type JetStreamManager } from "@nats-io/jetstream";
import { jetstream, type JetStreamClient } from "@nats-io/jetstream";
import { connect, headers, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import {
  ARTIFACT_COMMANDS,
  DELIVERY,
  PUBLISH,
  durables,
  eventPlaneOf,
  filters,
  MESH_COMMANDS,
  names,
  parsePrincipal,
  principalId,
  type HistoryArgs,
  type HistoryPage,
  type JoinReply,
  type LookupReply,
  type Principal,
  type RegisterReply,
} from "../schemas/index.js";
import { ArtifactService } from "./artifacts.js";
import { ChannelRegistry, type ResolvedChannel } from "./channel-registry.js";
import { serveControl } from "./control.js";
import { HISTORY_PAGE_BOUNDS, readHistoryPage } from "./history.js";
import { isConsumerNotFound } from "./js-errors.js";
import { logger, type Logger } from "./log.js";
import { ensureSpace, type SpaceOptions } from "./provision.js";
import { FULL_DISK_REMEDY, fullDiskRisk } from "./full-disk-risk.js";
import { checkReaderCall, checkSender, ConnectionWarden, IdentityRegistry, senderOf, serviceCreds, type AuthStore, type MintLimits } from "./auth/index.js";
import { credsBytesAuthenticator, serverUrls } from "./connect.js";
import { LivenessJudge } from "./liveness.js";
import { WildcardSweep } from "./wildcard-sweep.js";
import { Roster, rosterPage, type RosterSnapshotItem } from "./roster.js";
import { WatchWatermark } from "./watch-watermark.js";
import { CredentialAuthority } from "./auth/credential-authority.js";
import { NoPlaneMembershipError, ReadDeniedError, RoleNotGrantedError } from "./mesh-errors.js";

/** How long a roster snapshot waits for the presence view to read the bucket's latest write, ms. */
const PRESENCE_CATCH_UP_MS = 2_000;

/** The control endpoint name of the mesh service. */
export const MESH_ENDPOINT = "mesh";
/** The control endpoint of the artifact commands, also served by the mesh service. */
export const ARTIFACT_ENDPOINT = "artifact";

/** How long a delivered, unacked message waits before the broker redelivers it. */
export const ACK_WAIT_MS = DELIVERY.ackWaitMs;
/** Most unacked messages one durable hands out at a time. */
export const MAX_ACK_PENDING = DELIVERY.maxAckPending;

/** Keys of the members bucket. */
export const memberKeys = {
  dm: (p: Principal) => `dm.${principalId(p)}`,
  anycast: (role: string) => `svc.${role}`,
  channel: (p: Principal, channel: string) => `ch.${principalId(p)}.${channel}`,
  channelsOf: (p: Principal) => `ch.${principalId(p)}.>`,
};

/** A durable membership as recorded in the members bucket. */
export interface MembershipRecord {
  durable: string;
  stream: string;
  watermark?: number;
  createdAt: number;
}

/** Options of the mesh service: the space's storage plus consumer timing. */
export interface MeshServiceOptions extends SpaceOptions {
  /** How long a handed-out, unacked message waits before redelivery (default 30 s). */
  ackWaitMs?: number;
  /**
   * May `caller` read `channel`'s history? Default: everyone (open mesh). In auth mode the
   * identity registry answers, with the same scope the broker enforces on live reads.
   */
  authorizeRead?: (caller: Principal, channel: string) => boolean | Promise<boolean>;
  /** An artifact upload with no chunk for this long is dropped (default 60 s). */
  uploadIdleMs?: number;
  /** Static auth: the mesh service mints and revokes credentials with these keys. */
  auth?: { store: AuthStore; server: string };
  /** An endpoint silent (no beat, no write) this long is taken offline, ms (default PRESENCE.livenessMs). */
  livenessMs?: number;
  /** How often messages stored under a wildcard subject are removed, ms (default 30 s; see WildcardSweep). */
  wildcardSweepMs?: number;
  /** Static auth: what a credential other than the operator's may mint (defaults: DEFAULT_MINT_LIMITS). */
  mintLimits?: Partial<MintLimits>;
  /** How long a leaf's scope keeps a revoked seat before it narrows, ms (default 10 s). */
  leafNarrowDelayMs?: number;
  /**
   * How long one sender's repeated warnings (malformed beats, reply-less control requests…) are
   * counted instead of logged, ms (LogSampler; default 10 s).
   */
  warnIntervalMs?: number;
}

/** Commands whose sender the server must have named (static auth): they change who may do what. */
const PRIVILEGED_COMMANDS: ReadonlySet<string> = new Set(["mint", "revoke"]);

/** Replies of the mesh commands, by the names callers know (the table in schemas/ defines them). */
export type { HistoryPage, JoinReply, LookupReply, MintReply, RegisterReply } from "../schemas/index.js";

/** Largest history page, in encoded UTF-8 bytes of its JSON: well inside NATS's 1 MiB payload. */
export const HISTORY_PAGE_BYTES = HISTORY_PAGE_BOUNDS.maxBytes;

const nanos = (ms: number) => ms * 1_000_000;

/**
 * The mesh service of one space: provisions it, and creates the durable consumers agents may
 * only bind to. Serves on the control rail (`cotal.<space>.ep.mesh.one.<command>.<o>.<a>`):
 * `register {role?}` (the caller's DM inbox and role queue), `join {channel}` and
 * `leave {channel}` (durable channel memberships).
 */
export class MeshService {
  private constructor(
    readonly nc: NatsConnection,
    readonly space: string,
    private readonly jsm: JetStreamManager,
    private readonly members: KV,
    private readonly log: Logger,
    private readonly opts: MeshServiceOptions,
    private readonly js: JetStreamClient,
    private readonly roster: Roster,
    private readonly registry: ChannelRegistry,
    private readonly identities: IdentityRegistry,
    private readonly artifacts: ArtifactService,
    private readonly liveness: LivenessJudge,
    private readonly presence: { kv: KV; watermark: WatchWatermark },
    private sub?: Subscription,
    private artifactSub?: Subscription,
  ) {
    this.authority = new CredentialAuthority(nc, space, identities, this, log, opts);
  }

  /** Who may mint and revoke what, and the reads that judge by identity records (broker/auth/credential-authority.ts). */
  readonly authority: CredentialAuthority;

  /** Provision the space and start serving. */
  static async start(nc: NatsConnection, space: string, opts: MeshServiceOptions = {}): Promise<MeshService> {
    const log = logger("mesh-service", { space });
    const report = await ensureSpace(nc, space, opts);
    log.info({ report }, "space provisioned");
    const risk = fullDiskRisk(nc);
    if (risk) log.warn({ remedy: FULL_DISK_REMEDY }, risk);
    const jsm = await jetstreamManager(nc);
    const kvm = new Kvm(nc);
    const members = await kvm.open(names.membersBucket(space), { bindOnly: true });
    const roster = new Roster(log);
    const presenceKv = await kvm.open(names.presenceBucket(space), { bindOnly: true });
    const offline = opts.auth ? await clientsAccountDeleter(opts.auth, space, log) : undefined;
    const watermark = new WatchWatermark();
    const beats = await beatConnection(nc, space, opts, log);
    const liveness = await LivenessJudge.start(
      nc,
      space,
      presenceKv,
      members,
      roster,
      log,
      opts.livenessMs,
      offline?.remove,
      watermark,
      beats.nc,
      opts.warnIntervalMs,
    );
    const registry = new ChannelRegistry(await kvm.open(names.channelsBucket(space), { bindOnly: true }));
    const identities = new IdentityRegistry(members);
    const authorizeRead = opts.authorizeRead ?? (opts.auth ? (who: Principal, ch: string) => identities.mayRead(who, ch) : undefined);
    const artifacts = await ArtifactService.open(
      nc,
      space,
      log,
      authorizeRead ? { mayReadChannel: authorizeRead, identity: (who) => identities.get(who) } : undefined,
      opts.uploadIdleMs,
    );
    const svc = new MeshService(
      nc,
      space,
      jsm,
      members,
      log,
      { ...opts, ...(authorizeRead ? { authorizeRead } : {}) },
      jetstream(nc),
      roster,
      registry,
      identities,
      artifacts,
      liveness,
      { kv: presenceKv, watermark },
    );
    if (offline) svc.closers.push(offline.close);
    svc.beatsConnection = beats.nc;
    svc.closers.push(beats.close);
    // Static auth: nats-server counts no single credential's connections; the warden does.
    if (opts.auth) {
      const warden = await ConnectionWarden.start(opts.auth.store, opts.auth.server, space, log);
      svc.closers.push(() => warden.close());
    }
    const sweep = new WildcardSweep(jsm, space, log);
    sweep.start(opts.wildcardSweepMs ?? 30_000);
    svc.closers.push(async () => sweep.stop());
    // Static auth: the subject names the caller, the server names the credential that sent it; a
    // credential may act only as itself (the operator's as anyone, a leaf host's as its own identities).
    const sampling = opts.warnIntervalMs !== undefined ? { warnIntervalMs: opts.warnIntervalMs } : {};
    const authenticated = opts.auth
      ? {
          ...sampling,
          authenticate: async (caller: Principal, info: string | undefined, command: string) => {
            await checkSender(senderOf(info), caller, identities, PRIVILEGED_COMMANDS.has(command) ? `${command} credentials` : undefined);
            // A reader may call only reads (and its own memberships), whatever its permissions let through.
            await checkReaderCall(identities, caller, command);
          },
        }
      : sampling;
    svc.sub = serveControl(
      nc,
      space,
      MESH_ENDPOINT,
      MESH_COMMANDS,
      {
        register: async (args, caller) => svc.register(caller, await svc.grantedRole(caller, args.role)),
        lookup: (args) => svc.lookup(parsePrincipal(args.name)),
        join: (args, caller) => svc.join(caller, args.channel, args.member),
        leave: (args, caller) => svc.leave(caller, args.channel),
        roster: (args) => svc.rosterSnapshot(args.after),
        history: (args, caller) => svc.history(caller, args),
        channels: () => svc.channels(),
        mint: (args, caller, info) => svc.authority.mint(caller, args, senderOf(info)),
        revoke: (args, caller) => svc.authority.revoke(caller, args.name),
        grant: (args, caller) => svc.authority.grant(caller, parsePrincipal(args.name)),
        "may-approve": (args, caller) => svc.authority.mayApprove(caller, parsePrincipal(args.name)),
        whoami: (_args, caller) => svc.authority.whoami(caller),
        ping: async () => ({ space, pid: process.pid }),
      },
      log,
      authenticated,
    );
    svc.artifactSub = serveControl(
      nc,
      space,
      ARTIFACT_ENDPOINT,
      ARTIFACT_COMMANDS,
      {
        "artifact-begin": (args, caller) => artifacts.begin(caller, args),
        "artifact-chunk": (args, caller) => artifacts.chunk(caller, args),
        "artifact-commit": (args, caller) => artifacts.commit(caller, args),
        "artifact-get": (args, caller) => artifacts.get(caller, args),
      },
      log,
      authenticated,
    );
    await nc.flush();
    svc.authority.syncAllLeafScopes();
    return svc;
  }

  /** Create (once) a principal's DM inbox, holding every DM already stored for it, and its role queue. */
  async register(who: Principal, role?: string): Promise<RegisterReply> {
    const dm = durables.dm(who);
    const dmCreated = await this.ensureConsumer(names.dmStream(this.space), {
      durable_name: dm,
      filter_subject: filters.dmInbox(this.space, who),
      deliver_policy: DeliverPolicy.All,
    });
    if (dmCreated) await this.record(memberKeys.dm(who), { durable: dm, stream: names.dmStream(this.space), createdAt: Date.now() });
    let anycast: string | undefined;
    if (role) {
      anycast = durables.anycast(role);
      const created = await this.ensureConsumer(names.taskStream(this.space), {
        durable_name: anycast,
        filter_subject: filters.anycast(this.space, role),
        deliver_policy: DeliverPolicy.All,
      });
      if (created) await this.record(memberKeys.anycast(role), { durable: anycast, stream: names.taskStream(this.space), createdAt: Date.now() });
    }
    this.log.info({ who: principalId(who), role, dmCreated }, "registered");
    return { dm, dmCreated, ...(anycast ? { anycast } : {}) };
  }

  /**
   * The role a caller may register. On an open mesh, whatever it asks. With static auth the role
   * comes from the credential: asking for another is refused, asking for none gets none.
   */
  async grantedRole(caller: Principal, asked: string | undefined): Promise<string | undefined> {
    if (!this.opts.auth || asked === undefined) return asked;
    const rec = await this.identities.get(caller);
    if (!rec) {
      // Cotal's own service identities are not in the registry and hold no role.
      throw new RoleNotGrantedError(asked, undefined);
    }
    if (rec.role !== asked) throw new RoleNotGrantedError(asked, rec.role);
    return asked;
  }

  /** Whether `who` has a DM inbox, and its presence now; the members bucket itself stays private to this service. */
  async lookup(who: Principal): Promise<LookupReply> {
    const e = await this.members.get(memberKeys.dm(who));
    return {
      principal: principalId(who),
      dm: !!e && e.operation === "PUT",
      ...(this.opts.auth ? { registeredRole: await this.registeredRole(who) } : {}),
      status: this.roster.get(principalId(who))?.status ?? "offline",
    };
  }

  /**
   * Create a durable channel membership from the join watermark; idempotent. `member`: the
   * operator acting for a person (`cotal listen --as bob --impersonate`) creates bob's membership
   * and reads with its own right, since bob may be a name this mesh never minted (no read right).
   */
  async join(caller: Principal, channel: string, member?: string): Promise<JoinReply> {
    if (member !== undefined && this.opts.auth) this.authority.requireOperator(caller, `create ${member}'s membership of a channel`);
    if (this.opts.authorizeRead && !(await this.opts.authorizeRead(caller, channel))) throw new ReadDeniedError(channel);
    if (eventPlaneOf(channel)) throw new NoPlaneMembershipError(channel);
    const who = member === undefined ? caller : parsePrincipal(member);
    const stream = names.chatStream(this.space);
    const durable = durables.channel(who, channel);
    const existing = await this.members.get(memberKeys.channel(who, channel));
    if (existing && existing.operation === "PUT") {
      const rec = existing.json<MembershipRecord>();
      if (await this.consumerExists(stream, durable)) return { durable, created: false, watermark: rec.watermark ?? 1 };
    }
    const watermark = (await this.jsm.streams.info(stream)).state.last_seq + 1;
    await this.ensureConsumer(stream, {
      durable_name: durable,
      filter_subject: filters.channel(this.space, channel),
      deliver_policy: DeliverPolicy.StartSequence,
      opt_start_seq: watermark,
    });
    await this.record(memberKeys.channel(who, channel), { durable, stream, watermark, createdAt: Date.now() });
    this.log.info({ who: principalId(who), channel, watermark }, "joined durable channel");
    return { durable, created: true, watermark };
  }

  /** End a durable channel membership: its consumer is deleted. */
  async leave(who: Principal, channel: string): Promise<{ left: boolean }> {
    const durable = durables.channel(who, channel);
    let left = false;
    try {
      left = await this.jsm.consumers.delete(names.chatStream(this.space), durable);
    } catch (err) {
      if (!isConsumerNotFound(err)) throw err;
    }
    await this.members.delete(memberKeys.channel(who, channel));
    this.log.info({ who: principalId(who), channel, left }, "left durable channel");
    return { left };
  }

  /** The roster as this service sees it, one page after `after` (endpoints load it, then follow live writes). */
  async rosterSnapshot(after?: string): Promise<RosterSnapshotItem[]> {
    // The first page holds every write stored before it was asked for: the asker subscribed to
    // live writes first (followPresence), so nothing falls between the two.
    if (after === undefined) await this.presenceCaughtUp();
    const items = rosterPage(this.roster.snapshot(), after);
    if (!this.opts.auth) return items;
    // Static meshes: the role each credential holds, so no card can claim another.
    return Promise.all(items.map(async (i) => ({ ...i, registeredRole: await this.registeredRole(parsePrincipal(i.id)) })));
  }

  /** Wait (bounded) until this service's presence view has read everything the bucket stored so far. */
  private async presenceCaughtUp(): Promise<void> {
    const { kv, watermark } = this.presence;
    const caughtUp = await watermark.caughtUpWith(kv, PRESENCE_CATCH_UP_MS).catch((err: unknown) => {
      this.log.warn({ err }, "could not read the presence bucket's state; serving the roster as this view holds it");
      return true;
    });
    if (!caughtUp) this.log.warn({ applied: watermark.applied }, "the presence view is behind the bucket; serving the roster as it holds it");
  }

  /** The role `who`'s credential holds; null for none (and for Cotal's own service identities). */
  private async registeredRole(who: Principal): Promise<string | null> {
    return (await this.identities.get(who).catch(() => undefined))?.role ?? null;
  }

  /**
   * A page of a channel's history, if the caller may read it: read from the stream page by
   * page (at most one page in memory), at most HISTORY_PAGE_BYTES of encoded JSON.
   */
  async history(caller: Principal, q: HistoryArgs): Promise<HistoryPage> {
    const allowed = this.opts.authorizeRead ? await this.opts.authorizeRead(caller, q.channel) : true;
    if (!allowed) throw new ReadDeniedError(q.channel);
    const { channel, ...query } = q;
    return readHistoryPage(this.js, this.space, channel, query, HISTORY_PAGE_BOUNDS, this.log);
  }

  /** Configured channels. */
  channels(): Promise<ResolvedChannel[]> {
    return this.registry.list();
  }

  /**
   * The connection beats arrive on: the service's own second one (beatConnection), so what the
   * service receives is what `nc` and this receive together (tests and benches count both).
   */
  beatsConnection!: NatsConnection;

  /** Extra connections this service opened, closed on stop(). */
  private readonly closers: Array<() => Promise<unknown>> = [];

  async stop(): Promise<void> {
    this.authority.stop();
    this.liveness.stop();
    for (const c of this.closers.splice(0)) await c().catch(() => undefined);
    this.roster.stop();
    this.sub?.unsubscribe();
    this.artifactSub?.unsubscribe();
    this.artifacts.stop();
    await this.nc.flush();
  }

  private async consumerExists(stream: string, durable: string): Promise<boolean> {
    try {
      await this.jsm.consumers.info(stream, durable);
      return true;
    } catch (err) {
      if (isConsumerNotFound(err)) return false;
      throw err;
    }
  }

  /** Create the consumer unless it exists; true when it was created. */
  private async ensureConsumer(stream: string, cfg: Partial<ConsumerConfig> & { durable_name: string }): Promise<boolean> {
    if (await this.consumerExists(stream, cfg.durable_name)) return false;
    await this.jsm.consumers.add(stream, {
      ack_policy: AckPolicy.Explicit,
      ack_wait: nanos(this.opts.ackWaitMs ?? ACK_WAIT_MS),
      max_ack_pending: MAX_ACK_PENDING,
      max_deliver: -1,
      ...cfg,
    });
    return true;
  }

  private async record(key: string, rec: MembershipRecord): Promise<void> {
    await this.members.put(key, JSON.stringify(rec));
  }
}

/**
 * In static mode every watcher lives in the space's clients account, and a publish in the data
 * account (the mesh service's own) is stored but never delivered there. So the deletion that
 * takes a silent endpoint offline is published from the clients account, the way endpoints write
 * their keys: over a connection with the operator tool's scope, signed from the store this
 * service already holds (no privilege it did not have).
 */
async function clientsAccountDeleter(
  auth: NonNullable<MeshServiceOptions["auth"]>,
  space: string,
  log: Logger,
): Promise<{ remove: (id: string) => Promise<unknown>; close: () => Promise<unknown> }> {
  const creds = await serviceCreds(auth.store, space, "cli");
  const nc = await connect({
    servers: serverUrls(auth.server),
    name: "cotal-mesh-liveness",
    authenticator: credsBytesAuthenticator(creds),
    maxReconnectAttempts: -1,
    reconnectTimeWait: 250,
  });
  const bucket = names.presenceBucket(space);
  return {
    remove: async (id) => {
      const h = headers();
      h.set("KV-Operation", "DEL");
      const reply = await nc.request(`$KV.${bucket}.${id}`, new Uint8Array(0), { headers: h, timeout: PUBLISH.attemptTimeoutMs });
      const ack = JSON.parse(new TextDecoder().decode(reply.data)) as { error?: { description?: string } };
      if (ack.error) throw new Error(`the presence bucket refused the deletion of ${id}: ${ack.error.description ?? "unknown error"}`);
    },
    close: () => nc.close().catch((err: unknown) => log.debug({ err }, "liveness connection close failed")),
  };
}

/**
 * The connection the liveness judge reads beats on: its own, with the service's credential, so a
 * flood of beats from one credential (any agent may publish its own as fast as it likes) is never
 * queued ahead of the control rail on one socket, and when the server cuts a consumer too slow for
 * it (nats-server's slow-consumer limit), it cuts this one, not the rail's.
 */
async function beatConnection(
  nc: NatsConnection,
  space: string,
  opts: MeshServiceOptions,
  log: Logger,
): Promise<{ nc: NatsConnection; close: () => Promise<unknown> }> {
  const beats = await connect({
    // Static auth: the mesh service's own credential, from the store it holds; open: the server it is on.
    servers: opts.auth ? serverUrls(opts.auth.server) : [nc.getServer()],
    ...(opts.auth ? { authenticator: credsBytesAuthenticator(await serviceCreds(opts.auth.store, space, "mesh")) } : {}),
    name: `cotal-mesh-beats-${space}`,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 250,
  });
  return { nc: beats, close: () => beats.close().catch((err: unknown) => log.debug({ err }, "beats connection close failed")) };
}

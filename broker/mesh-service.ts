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
  CotalError,
  principalId,
  withArticle,
  type HistoryArgs,
  type HistoryPage,
  type JoinReply,
  type LookupReply,
  type MintReply,
  type Principal,
  type RegisterReply,
  type RevokeReply,
  type SpawnGrant,
  type TableParsedArgs,
  type WhoamiReply,
  mayApprove,
} from "../schemas/index.js";
import { ArtifactService } from "./artifacts.js";
import { ChannelRegistry, type ResolvedChannel } from "./channel-registry.js";
import { serveControl } from "./control.js";
import { HISTORY_PAGE_BOUNDS, readHistoryPage } from "./history.js";
import { isConsumerNotFound } from "./js-errors.js";
import { logger, type Logger } from "./log.js";
import { ensureSpace, type SpaceOptions } from "./provision.js";
import {
  checkMintSpec,
  checkReaderCall,
  checkSender,
  clientsAccount,
  ConnectionWarden,
  DEFAULT_MINT_LIMITS,
  IdentityRegistry,
  LEAF_SEAT_PROFILES,
  leafSeats,
  liveRevocations,
  MintRefusedError,
  plannedLeafScope,
  pushAccountJwt,
  revokeUsers,
  seatSpec,
  senderOf,
  SERVICE_PRINCIPALS,
  serviceCreds,
  signUser,
  type AuthStore,
  type IdentitySpec,
  type MintLimits,
  type RevokedUser,
  type Sender,
} from "./auth/index.js";
import { credsBytesAuthenticator, serverUrls } from "./connect.js";
import { LivenessJudge } from "./liveness.js";
import { WildcardSweep } from "./wildcard-sweep.js";
import { Roster, rosterPage, type RosterSnapshotItem } from "./roster.js";
import { WatchWatermark } from "./watch-watermark.js";

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

/**
 * How long a leaf's scope keeps a retired seat before it narrows (syncLeafScopeAfterReply): each
 * change remakes the host's connection, so stops close together go as one, and a start within it
 * carries the narrowing along.
 */
const NARROW_DELAY_MS = 10_000;

/** Commands whose sender the server must have named (static auth): they change who may do what. */
const PRIVILEGED_COMMANDS: ReadonlySet<string> = new Set(["mint", "revoke"]);

/** Only the mesh host's own CLI credential may mint and revoke. */
export class NotAllowedError extends CotalError {
  constructor(what: string) {
    super("not-allowed", `Only the mesh host's operator credential may ${what}.`, {
      remedy: "Run the command on the mesh host (it uses .cotal/auth/ there), or pass that credential with --creds.",
    });
  }
}

/** Replies of the mesh commands, by the names callers know (the table in schemas/ defines them). */
export type { HistoryPage, JoinReply, LookupReply, MintReply, RegisterReply } from "../schemas/index.js";

/** Largest history page, in encoded UTF-8 bytes of its JSON: well inside NATS's 1 MiB payload. */
export const HISTORY_PAGE_BYTES = HISTORY_PAGE_BOUNDS.maxBytes;

/** The caller may not read that channel. */
export class ReadDeniedError extends CotalError {
  constructor(channel: string) {
    super("read-denied", `Not allowed to read channel ${channel}.`, {
      remedy: "Ask the mesh admin for a credential whose --allow-subscribe includes it.",
    });
  }
}

/** An event plane has no durable membership: it is a rolling window, read live and by history. */
export class NoPlaneMembershipError extends CotalError {
  constructor(channel: string) {
    super("no-plane-membership", `${channel} is an event plane: it is read live and by history, and has no durable membership.`, {
      remedy: "Read it with `cotal history`, `cotal console` or a live subscription; joining it as a channel does that.",
    });
  }
}

/** The credential does not hold the role it asked to register. */
export class RoleNotGrantedError extends CotalError {
  constructor(role: string, granted: string | undefined) {
    super("role-not-granted", `This credential does not hold the role ${role}${granted ? ` (it holds ${granted})` : " (it holds none)"}.`, {
      remedy: "Roles come from the credential: ask the mesh admin for one minted with --role, or leave the role out.",
    });
  }
}

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
  ) {}

  /** Provision the space and start serving. */
  static async start(nc: NatsConnection, space: string, opts: MeshServiceOptions = {}): Promise<MeshService> {
    const log = logger("mesh-service", { space });
    const report = await ensureSpace(nc, space, opts);
    log.info({ report }, "space provisioned");
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
        mint: (args, caller, info) => svc.mint(caller, args, senderOf(info)),
        revoke: (args, caller) => svc.revoke(caller, args.name),
        grant: (args, caller) => svc.grant(caller, parsePrincipal(args.name)),
        "may-approve": (args, caller) => svc.mayApprove(caller, parsePrincipal(args.name)),
        whoami: (_args, caller) => svc.whoami(caller),
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
    svc.syncAllLeafScopes();
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
    if (member !== undefined && this.opts.auth) this.requireOperator(caller, `create ${member}'s membership of a channel`);
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

  /**
   * Sign a credential for `userPub` (generated where the credential will live, so its seed
   * never travels). Optionally pre-create the identity's DM durable and role queue.
   */
  async mint(caller: Principal, req: TableParsedArgs<typeof MESH_COMMANDS, "mint">, sender?: Sender): Promise<MintReply> {
    const who = parsePrincipal(req.name);
    // Cotal's own services (the operator's tool among them) are known by these names: never minted at run time.
    if (who.actor.startsWith("cotal_"))
      throw new MintRefusedError(
        `Names starting with cotal_ are reserved for Cotal's own services; ${principalId(who)} was not minted.`,
        "Choose another name.",
      );
    if (req.approve.length && req.profile !== "person")
      throw new MintRefusedError(
        `The approve right is a person's: ${principalId(who)} is minted as ${req.profile}; nothing was minted.`,
        "Mint it with --profile person, or without --approve (a seat's spawner answers its helpers' asks as their owner).",
      );
    const existing = await this.identities.get(who);
    const auth = await this.requireMinter(
      caller,
      req.profile !== "agent"
        ? `mint ${req.profile} credentials`
        : mintedByOther(existing, caller)
          ? `mint ${principalId(who)}, a name it did not mint`
          : undefined,
      "mint credentials",
    );
    const spec: IdentitySpec = { ...seatSpec(this.space, who, req), ...(req.spawnLimit !== undefined ? { spawnLimit: req.spawnLimit } : {}) };
    // Refused before anything is counted or revoked (signUser checks again).
    checkMintSpec(spec);
    const expiresInMs = await this.admitMint(caller, auth.store, req.expiresInMs);
    // What happens to the name's earlier credentials is said, not left to be found out: they stay valid.
    const revoked = auth.store.revocations(clientsAccount(this.space));
    // A name minted again under another profile is a new identity: its earlier credentials carry the
    // old permissions but would be judged by the new record (an agent's by a manager's), so they end.
    if (existing && existing.profile !== req.profile) {
      await this.revokeLogged(auth, principalId(who), existing.users);
      this.log.info(
        { who: principalId(who), from: existing.profile, to: req.profile, revoked: existing.users.length },
        "profile changed: revoked the earlier credentials",
      );
    }
    const othersValid = (existing && existing.profile === req.profile ? existing.users : []).filter(
      (u) => !(u.pub in revoked) && !(u.expiresAt !== undefined && u.expiresAt <= Date.now()),
    ).length;
    // A leaf host's manager mints over the leaf connection: revoking that leaf revokes this too,
    // and the leaf may act as this name only once its scope says so (leaf-scope.ts).
    const via = sender?.profile === "leaf" && sender.name !== principalId(caller) ? sender.name : await this.assignedLeaf(caller, req.leaf, req.profile);
    const widens = via && LEAF_SEAT_PROFILES.has(req.profile) ? await this.plannedScope(parsePrincipal(via), spec) : false;
    // A leaf credential is signed with its own scoped key, whose scope the server knows before the credential is used.
    if (req.profile === "leaf") await this.syncLeafScope(who);
    const user = await signUser(
      spec,
      req.userPub,
      req.profile === "leaf" ? auth.store.leafScopeKey(this.space, principalId(who)) : auth.store.signingKey(this.space),
      auth.store.accountKey(clientsAccount(this.space)).getPublicKey(),
      expiresInMs,
    );
    await this.identities.add(
      who,
      {
        profile: req.profile,
        allowSubscribe: req.allowSubscribe,
        allowPublish: req.allowPublish,
        ...(req.role ? { role: req.role } : {}),
        ...(req.events !== undefined ? { events: req.events } : {}),
        ...(req.allowSpawn.length ? { allowSpawn: req.allowSpawn } : {}),
        ...(req.spawnLimit !== undefined ? { spawnLimit: req.spawnLimit } : {}),
        ...(req.approve.length ? { approve: req.approve } : {}),
        ...(req.allowSpawn.length && req.personaDigests ? { personaDigests: pinnedOf(req.allowSpawn, req.personaDigests) } : {}),
        ...(req.steer ? { steer: true as const } : {}),
        mintedBy: principalId(caller),
      },
      {
        pub: user.userPub,
        issuedAt: user.issuedAt,
        ...(user.expiresAt ? { expiresAt: user.expiresAt } : {}),
        ...(via ? { via } : {}),
        ...(req.profile === "leaf" ? { scoped: true as const } : {}),
      },
    );
    // A reader gets no DM inbox (nobody's mail is for it): provisioning creates its memberships only.
    const provisioned = req.provision && req.profile !== "reader" ? await this.register(who, req.role) : undefined;
    // Event planes are read live and by history: no membership to create.
    if (req.provision) for (const ch of req.allowSubscribe.filter((c) => !eventPlaneOf(c))) await this.join(who, ch);
    this.log.info({ who: principalId(who), profile: req.profile, expiresAt: user.expiresAt, by: principalId(caller), via }, "minted a credential");
    if (via && widens) this.syncLeafScopeAfterReply(parsePrincipal(via));
    return {
      ...(widens ? { leafReconnect: true as const } : {}),
      principal: principalId(who),
      jwt: user.jwt,
      userPub: user.userPub,
      ...(user.expiresAt ? { expiresAt: user.expiresAt } : {}),
      ...(provisioned ? { provisioned } : {}),
      othersValid,
    };
  }

  /** Revoke every credential issued to `name`: live connections are cut, new ones refused. */
  async revoke(caller: Principal, name: string): Promise<RevokeReply> {
    const who = parsePrincipal(name);
    const rec = await this.identities.get(who);
    const auth = await this.requireMinter(
      caller,
      rec?.profile !== "agent"
        ? `revoke credentials of ${rec ? withArticle(rec.profile) : "a name never minted"}`
        : mintedByOther(rec, caller)
          ? `revoke ${principalId(who)}, a name it did not mint`
          : undefined,
      "revoke credentials",
    );
    const users: RevokedUser[] = [...(rec?.users ?? [])];
    // A leaf host's credential: what its host minted through it goes with it.
    const through = rec?.profile === "leaf" ? await this.identities.mintedVia(who) : [];
    for (const m of through) users.push(...m.users);
    // Its scope goes with it (the same account update): nothing is signed under that key any more.
    if (rec?.profile === "leaf") auth.store.setLeafScope(this.space, principalId(who), undefined);
    await this.revokeLogged(auth, principalId(who), users);
    // A seat of a leaf host: that host's connection no longer carries its name.
    for (const leaf of new Set((rec?.users ?? []).flatMap((u) => (u.via ? [u.via] : []))))
      this.syncLeafScopeAfterReply(parsePrincipal(leaf), this.opts.leafNarrowDelayMs ?? NARROW_DELAY_MS);
    this.log.info({ who: principalId(who), revoked: users.length, through: through.map((m) => principalId(m.who)) }, "revoked credentials");
    return { principal: principalId(who), revoked: users.length };
  }

  /**
   * The leaf host the operator says an identity runs on (`mint --leaf`): a leaf it minted, for an
   * agent, reader or observer. Undefined when none is named.
   */
  private async assignedLeaf(caller: Principal, leaf: string | undefined, profile: string): Promise<string | undefined> {
    if (leaf === undefined) return undefined;
    const who = parsePrincipal(leaf);
    if (principalId(caller) !== principalId(SERVICE_PRINCIPALS.cli)) throw new NotAllowedError("name the leaf host another identity runs on");
    if (!LEAF_SEAT_PROFILES.has(profile))
      throw new MintRefusedError(
        `A ${profile} does not run on a leaf host: --on applies to agents, readers and observers.`,
        "Leave --on out; a leaf host's manager is minted as `<host> --profile manager`, and its leaf connection as `<host>_leaf --profile leaf`.",
      );
    if ((await this.identities.get(who))?.profile !== "leaf")
      throw new MintRefusedError(
        `${principalId(who)} is not a leaf credential of this space; nothing was minted.`,
        `Mint the host's leaf credential first: cotal mint ${who.actor.endsWith("_leaf") ? who.actor : `${who.actor}_leaf`} --profile leaf.`,
      );
    return principalId(who);
  }

  /** Would minting `seat` through `leaf` widen that leaf's scope? Throws LeafScopeFullError past its bound, before anything is signed. */
  private async plannedScope(leaf: Principal, seat: IdentitySpec): Promise<boolean> {
    const { store } = this.opts.auth!;
    return plannedLeafScope(store, this.space, leaf, await leafSeats(store, this.identities, this.space, leaf, seat), this.limits.leafScopesBytes).changed;
  }

  /**
   * Bring `leaf`'s scope in the clients account to the seats its host runs now (leafSeats), and
   * push the account: the hub closes that leaf's connection, which comes back under the new scope
   * about a second later (its reconnect interval). Serialized, so account updates go in order.
   */
  private syncLeafScope(leaf: Principal): Promise<boolean> {
    const run = this.scopeSyncs.then(async () => {
      const { store, server } = this.opts.auth!;
      const seats = await leafSeats(store, this.identities, this.space, leaf);
      const { perms, changed } = plannedLeafScope(store, this.space, leaf, seats, this.limits.leafScopesBytes);
      if (!changed) return false;
      // Every reply sent so far is at the server, and so queued on the leaf connection, which
      // sends what it holds before it closes.
      await this.nc.flush();
      store.setLeafScope(this.space, principalId(leaf), perms);
      await pushAccountJwt(store, server, await store.writeAccountJwt(clientsAccount(this.space), {}));
      this.log.info({ leaf: principalId(leaf), seats: seats.map((s) => principalId(s.who)) }, "leaf scope changed: its connection is made again under it");
      return true;
    });
    this.scopeSyncs = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  }

  /**
   * syncLeafScope once the reply being sent now has left: a changed scope closes the leaf
   * connection it may be crossing. A narrowing (a seat retired) waits `delayMs`, so that what its
   * host does next (its manager's answer to `cotal stop`) crosses first, and several go as one.
   */
  private syncLeafScopeAfterReply(leaf: Principal, delayMs = 0): void {
    const id = principalId(leaf);
    const pending = this.scopeTimers.get(id);
    if (pending) clearTimeout(pending);
    this.scopeTimers.set(
      id,
      setTimeout(() => {
        this.scopeTimers.delete(id);
        this.syncLeafScope(leaf).catch((err: unknown) =>
          this.log.error({ err, leaf: id }, "leaf scope not updated: the leaf host keeps its earlier rights until its next mint or revoke"),
        );
      }, delayMs),
    );
  }

  /**
   * Bring every leaf's scope to what its host runs now (at start: a narrowing may have been pending
   * at the last stop), and name each leaf credential minted before leaf scopes: it still carries
   * the old wide rights (any agent's name) until it is minted again.
   */
  syncAllLeafScopes(): void {
    if (!this.opts.auth) return;
    const scopes = this.opts.auth.store.leafScopes(this.space);
    for (const leaf of Object.keys(scopes)) this.syncLeafScopeAfterReply(parsePrincipal(leaf));
    void this.identities
      .leaves()
      .then((leaves) => {
        const revoked = this.opts.auth!.store.revocations(clientsAccount(this.space));
        const unscoped = leaves.filter((l) =>
          l.rec.users.some((u) => !u.scoped && !(u.pub in revoked) && !(u.expiresAt !== undefined && u.expiresAt <= Date.now())),
        );
        for (const { who: leaf } of unscoped)
          this.log.warn(
            { leaf: principalId(leaf), remedy: `cotal mint ${leaf.actor} --profile leaf --replace, then render and reload that host's leaf server` },
            "a leaf credential minted before leaf scopes may still act as any agent of the space",
          );
      })
      .catch((err: unknown) => this.log.warn({ err }, "could not list the leaf credentials"));
  }

  /** Revoke, saying so loudly when the server did not take it: a revocation that failed is never silent. */
  private async revokeLogged(auth: NonNullable<MeshServiceOptions["auth"]>, who: string, users: RevokedUser[]): Promise<void> {
    try {
      await revokeUsers(auth.store, auth.server, this.space, users, this.limits.maxRevocations);
    } catch (err) {
      this.log.error({ err, who, credentials: users.length }, "revocation failed: the credentials stay valid");
      throw err;
    }
  }

  private get limits(): MintLimits {
    return { ...DEFAULT_MINT_LIMITS, ...this.opts.mintLimits };
  }

  /**
   * The operator mints as asked. Any other minter (a manager, for its seats) gets credentials that
   * expire within the lifetime limit, at most so many unexpired at once, and none while the
   * revocation list is near full: their revocations then drop out as they expire, and what is left
   * of the list is the operator's. Returns the lifetime to sign.
   */
  private async admitMint(caller: Principal, store: AuthStore, asked: number | undefined): Promise<number | undefined> {
    if (principalId(caller) === principalId(SERVICE_PRINCIPALS.cli)) return asked;
    const limits = this.limits;
    const lifetime = Math.min(asked ?? limits.maxLifetimeMs, limits.maxLifetimeMs);
    const listed = liveRevocations(store, this.space);
    if (listed >= limits.mintersRevocationCap) {
      this.log.error({ caller: principalId(caller), revocations: listed, cap: limits.mintersRevocationCap }, "mint refused: the revocation list is near full");
      throw new MintRefusedError(
        `The space's revocation list holds ${listed} revocations, at the ${limits.mintersRevocationCap} after which only the operator mints; nothing was minted.`,
        "Revocations drop out as their credentials expire; the operator can still mint and revoke. Find who minted and revoked so many (the mesh service's log).",
      );
    }
    await this.identities.reserveMint(caller, Date.now() + lifetime, limits.perMinter);
    return lifetime;
  }

  /**
   * The operator's credential may mint and revoke anything; a manager's credential (profile
   * `manager`) only agent credentials of names it minted itself, for the seats it starts (so it can
   * neither take over nor cut off anyone else's name). `operatorOnly` names
   * what the request does beyond that (undefined: an agent credential).
   */
  private async requireMinter(caller: Principal, operatorOnly: string | undefined, what: string): Promise<NonNullable<MeshServiceOptions["auth"]>> {
    if (this.opts.auth && principalId(caller) !== principalId(SERVICE_PRINCIPALS.cli) && operatorOnly === undefined) {
      if ((await this.identities.get(caller))?.profile === "manager") return this.opts.auth;
    }
    return this.requireOperator(caller, operatorOnly ?? what);
  }

  private requireOperator(caller: Principal, what: string): NonNullable<MeshServiceOptions["auth"]> {
    if (!this.opts.auth)
      throw new CotalError("open-mesh", `This mesh is open (no credentials): there is nothing to ${what}.`, {
        remedy: "Start the mesh without --open to use credentials.",
      });
    if (principalId(caller) !== principalId(SERVICE_PRINCIPALS.cli)) throw new NotAllowedError(what);
    return this.opts.auth;
  }

  /**
   * The caller's principal and the profile its name was minted with. A credential made before the
   * store it is judged by (a folder's mesh moved to a new cluster) connects but is known to no
   * record: `cotal up` asks this to know the host manager's credential must be minted again.
   */
  async whoami(caller: Principal): Promise<WhoamiReply> {
    const principal = principalId(caller);
    if (!this.opts.auth) return { principal };
    if (principal === principalId(SERVICE_PRINCIPALS.cli)) return { principal, profile: "cli" };
    const rec = await this.identities.get(caller);
    return rec ? { principal, profile: rec.profile } : { principal };
  }

  /**
   * What `who` was minted with, as a manager judges a spawn by it (docs/manager.md, Helpers): its
   * profile, channels, role and spawn right. Asked by the operator, a manager (for whoever calls it)
   * or the name itself; anyone else is refused (`not-allowed`): another's scope is not theirs to read.
   */
  async grant(caller: Principal, who: Principal): Promise<SpawnGrant> {
    const principal = principalId(who);
    if (!this.opts.auth) return { principal, minted: false, allowSubscribe: [], allowPublish: [], allowSpawn: [], personaDigests: {} };
    if (principalId(caller) !== principalId(SERVICE_PRINCIPALS.cli) && principalId(caller) !== principal) {
      if ((await this.identities.get(caller))?.profile !== "manager") throw new NotAllowedError(`read what ${principal} was minted with (a manager may too)`);
    }
    const rec = await this.identities.get(who);
    if (!rec) return { principal, minted: false, allowSubscribe: [], allowPublish: [], allowSpawn: [], personaDigests: {} };
    return {
      principal,
      minted: true,
      profile: rec.profile,
      allowSubscribe: rec.allowSubscribe,
      allowPublish: rec.allowPublish,
      ...(rec.role ? { role: rec.role } : {}),
      allowSpawn: rec.allowSpawn ?? [],
      ...(rec.spawnLimit !== undefined ? { spawnLimit: rec.spawnLimit } : {}),
      personaDigests: rec.personaDigests ?? {},
      ...(rec.steer ? { steer: true } : {}),
    };
  }

  /**
   * Whether `who` may answer `seat`'s permission asks by the approve right (docs/security.md, The
   * approve right): the operator, or a name whose identity record's `approve` names the seat's
   * actor, its id or `*`. The seat asks about an answer it received; the answer reveals nothing of
   * another seat. The seat's owner is the seat's own to know (its launch says who spawned it).
   * On an open mesh there are no rights: anyone may.
   */
  async mayApprove(seat: Principal, who: Principal): Promise<{ principal: string; allowed: boolean }> {
    const principal = principalId(who);
    if (!this.opts.auth) return { principal, allowed: true };
    const rec = principal === principalId(SERVICE_PRINCIPALS.cli) ? undefined : await this.identities.get(who);
    return { principal, allowed: mayApprove(who, seat, { operator: SERVICE_PRINCIPALS.cli, approve: rec?.approve }) };
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
  /** Leaf scope updates, one after another (syncLeafScope). */
  private scopeSyncs: Promise<void> = Promise.resolve();
  /** Scope updates waiting to run (syncLeafScopeAfterReply), by leaf: one each, dropped on stop (the next start syncs every leaf). */
  private readonly scopeTimers = new Map<string, NodeJS.Timeout>();

  async stop(): Promise<void> {
    for (const t of this.scopeTimers.values()) clearTimeout(t);
    this.scopeTimers.clear();
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

/** A name someone other than `caller` minted first (a name minted before `mintedBy` was kept counts as the operator's). */
function mintedByOther(rec: { mintedBy?: string | undefined } | undefined, caller: Principal): boolean {
  return rec !== undefined && rec.mintedBy !== principalId(caller);
}

/** The digests of the personas a spawn right names (a digest for any other persona pins nothing). */
function pinnedOf(allowSpawn: readonly string[], digests: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(allowSpawn.filter((p) => digests[p] !== undefined).map((p) => [p, digests[p]!]));
}

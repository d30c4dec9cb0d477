import type { NatsConnection } from "@nats-io/transport-node";
import {
  CotalError,
  eventPlaneOf,
  mayApprove,
  parsePrincipal,
  principalId,
  withArticle,
  type JoinReply,
  type MESH_COMMANDS,
  type MintReply,
  type Principal,
  type RegisterReply,
  type RevokeReply,
  type SpawnGrant,
  type TableParsedArgs,
  type WhoamiReply,
} from "../../schemas/index.js";
import type { Logger } from "../log.js";
import type { AuthStore } from "./auth-store.js";
import { pushAccountJwt } from "./revoke.js";
import type { IdentityRegistry } from "./index.js";
import {
  checkMintSpec,
  clientsAccount,
  DEFAULT_MINT_LIMITS,
  LEAF_SEAT_PROFILES,
  leafSeats,
  liveRevocations,
  MintRefusedError,
  plannedLeafScope,
  revokeUsers,
  seatSpec,
  SERVICE_PRINCIPALS,
  signUser,
  type IdentitySpec,
  type MintLimits,
  type RevokedUser,
  type Sender,
} from "./index.js";

/** The keys a static space mints with, and the server its account updates go to. */
export interface SpaceAuth {
  store: AuthStore;
  server: string;
}

/** What the authority needs of its space beyond credentials. */
export interface CredentialAuthorityOptions {
  /** Static auth; absent on an open mesh (nothing to mint). */
  auth?: SpaceAuth | undefined;
  /** What a credential other than the operator's may mint (defaults: DEFAULT_MINT_LIMITS). */
  mintLimits?: Partial<MintLimits> | undefined;
  /** How long a leaf's scope keeps a revoked seat before it narrows, ms (default 10 s). */
  leafNarrowDelayMs?: number | undefined;
}

/** Where a minted name's inbox and memberships are made (`mint --provision`): the mesh service's own. */
export interface Provisioner {
  register(who: Principal, role?: string): Promise<RegisterReply>;
  join(who: Principal, channel: string): Promise<JoinReply>;
}

/**
 * How long a leaf's scope keeps a retired seat before it narrows (syncLeafScopeAfterReply): each
 * change remakes the host's connection, so stops close together go as one, and a start within it
 * carries the narrowing along.
 */
const NARROW_DELAY_MS = 10_000;

/** Only the mesh host's own CLI credential may mint and revoke. */
export class NotAllowedError extends CotalError {
  constructor(what: string) {
    super("not-allowed", `Only the mesh host's operator credential may ${what}.`, {
      remedy: "Run the command on the mesh host (it uses .cotal/auth/ there), or pass that credential with --creds.",
    });
  }
}

/**
 * The space's credential authority, served on the mesh service's control rail: who may mint and
 * revoke what (the operator anything; a manager agent credentials of names it minted, within the
 * mint limits), the identity records a mint writes, leaf hosts' scopes, and the reads that judge
 * by those records (`whoami`, `grant`, `may-approve`).
 */
export class CredentialAuthority {
  /** Leaf scope updates, one after another (syncLeafScope). */
  private scopeSyncs: Promise<void> = Promise.resolve();
  /** Scope updates waiting to run (syncLeafScopeAfterReply), by leaf: one each, dropped on stop (the next start syncs every leaf). */
  private readonly scopeTimers = new Map<string, NodeJS.Timeout>();

  constructor(
    private readonly nc: NatsConnection,
    private readonly space: string,
    private readonly identities: IdentityRegistry,
    private readonly memberships: Provisioner,
    private readonly log: Logger,
    private readonly opts: CredentialAuthorityOptions,
  ) {}

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
    const provisioned = req.provision && req.profile !== "reader" ? await this.memberships.register(who, req.role) : undefined;
    // Event planes are read live and by history: no membership to create.
    if (req.provision) for (const ch of req.allowSubscribe.filter((c) => !eventPlaneOf(c))) await this.memberships.join(who, ch);
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
  private async revokeLogged(auth: SpaceAuth, who: string, users: RevokedUser[]): Promise<void> {
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
  private async requireMinter(caller: Principal, operatorOnly: string | undefined, what: string): Promise<SpaceAuth> {
    if (this.opts.auth && principalId(caller) !== principalId(SERVICE_PRINCIPALS.cli) && operatorOnly === undefined) {
      if ((await this.identities.get(caller))?.profile === "manager") return this.opts.auth;
    }
    return this.requireOperator(caller, operatorOnly ?? what);
  }

  requireOperator(caller: Principal, what: string): SpaceAuth {
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

  /** Drop the scope updates still waiting (the next start syncs every leaf). */
  stop(): void {
    for (const t of this.scopeTimers.values()) clearTimeout(t);
    this.scopeTimers.clear();
  }
}

/** A name someone other than `caller` minted first (a name minted before `mintedBy` was kept counts as the operator's). */
function mintedByOther(rec: { mintedBy?: string | undefined } | undefined, caller: Principal): boolean {
  return rec !== undefined && rec.mintedBy !== principalId(caller);
}

/** The digests of the personas a spawn right names (a digest for any other persona pins nothing). */
function pinnedOf(allowSpawn: readonly string[], digests: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(allowSpawn.filter((p) => digests[p] !== undefined).map((p) => [p, digests[p]!]));
}

import type { KV } from "@nats-io/kv";
import { z } from "zod";
import {
  AllowSpawn,
  ApproveRight,
  ChannelName,
  CotalError,
  describeIssues,
  eventsChannelOf,
  parsePrincipal,
  principalId,
  PrincipalId,
  RoleName,
  PersonaDigests,
  SpawnLimit,
  type Principal,
} from "../../schemas/index.js";
import { LEAF_SUFFIX, PROFILES, type Profile } from "./permissions.js";

/** What the mesh service minted for one principal (kept in the data account only). */
export const IdentityRecord = z.object({
  profile: z.enum(PROFILES),
  allowSubscribe: z.array(ChannelName),
  allowPublish: z.array(ChannelName),
  role: RoleName.optional(),
  /** Whether it may publish its own event plane, as asked at mint (absent: the default, permissionsFor). */
  events: z.boolean().optional(),
  /** Personas it may spawn helpers of (docs/manager.md, Helpers); absent: none. */
  allowSpawn: AllowSpawn.optional(),
  /** Helpers it may hold at once (absent: DEFAULT_SPAWN_LIMIT). */
  spawnLimit: SpawnLimit.optional(),
  /** Seats whose permission asks it may answer (a person; docs/security.md, The approve right); absent: none. */
  approve: ApproveRight.optional(),
  /** The agent files its personas were minted with (absent: none pinned, so no helper starts). */
  personaDigests: PersonaDigests.optional(),
  /** A person that may steer seats (docs/security.md, People); absent: not. */
  steer: z.literal(true).optional(),
  /** Who minted the name first (a manager may mint and revoke only names it minted itself). */
  mintedBy: z.string().optional(),
  /** Every credential issued to this principal (revocation names them all). */
  users: z.array(
    z.object({
      pub: z.string().regex(/^U[A-Z2-7]{55}$/),
      issuedAt: z.number().int().nonnegative(),
      expiresAt: z.number().int().nonnegative().optional(),
      /**
       * The credential the mint came through when it was not the minter's own: a leaf host's
       * (its manager minting over the leaf connection). Revoking that leaf revokes this credential.
       */
      via: PrincipalId.optional(),
      /** A leaf credential signed with its leaf's scoped key (leaf-scope.ts); one without it carries the old wide rights. */
      scoped: z.literal(true).optional(),
    }),
  ),
});
export type IdentityRecord = z.infer<typeof IdentityRecord>;

/** A stored identity record does not parse: never trusted, never silently replaced. */
export class CorruptIdentityRecordError extends CotalError {
  constructor(id: string, detail: string) {
    super("corrupt-identity-record", `The identity record of ${id} is not valid: ${detail}.`, {
      remedy: "Revoke the name (`cotal revoke`) and mint it again; report how the record was changed.",
    });
  }
}

/** A minter holds as many unexpired credentials as it may. */
export class MintLimitError extends CotalError {
  constructor(minter: string, limit: number, nextFreeAt: number) {
    super("mint-limit", `${minter} already holds ${limit} unexpired credentials it minted, its limit; nothing was minted.`, {
      remedy: `A place frees when one of them expires (the next at ${new Date(nextFreeAt).toISOString()}). Revoke and retire seats you no longer need; the operator mints without this limit.`,
    });
  }
}

/** Index keys of the credentials minted through a leaf: `via.<leaf>.<name>`. */
const VIA_PREFIX = "via";

/** How often a write retries after losing a race with another writer. */
const MAX_ATTEMPTS = 8;

/** Profiles whose view is every channel (docs/security.md, Profiles). */
const READS_EVERY_CHANNEL: ReadonlySet<Profile> = new Set<Profile>(["observer", "person", "admin", "cli", "mesh"]);

/**
 * Minted identities, kept in the members bucket under `id.<owner>.<actor>`. The bucket lives in
 * the data account, which no client can reach. Every record read is validated; every write is a
 * compare-and-set on the revision read, so two concurrent mints of one name both land (a lost
 * user key would let `revoke` miss a live credential).
 */
export class IdentityRegistry {
  constructor(private readonly kv: KV) {}

  private key(who: Principal): string {
    return `id.${principalId(who)}`;
  }

  private async read(who: Principal): Promise<{ rec?: IdentityRecord; revision: number }> {
    const e = await this.kv.get(this.key(who));
    if (!e || e.operation !== "PUT") return { revision: e?.revision ?? 0 };
    let raw: unknown;
    try {
      raw = e.json();
    } catch {
      throw new CorruptIdentityRecordError(principalId(who), "not JSON");
    }
    const parsed = IdentityRecord.safeParse(raw);
    if (!parsed.success) throw new CorruptIdentityRecordError(principalId(who), describeIssues(parsed.error).join("; "));
    return { rec: parsed.data, revision: e.revision };
  }

  async get(who: Principal): Promise<IdentityRecord | undefined> {
    return (await this.read(who)).rec;
  }

  /** Every leaf credential's principal minted here (named `<host>_leaf`, so only those records are read). */
  async leaves(): Promise<Array<{ who: Principal; rec: IdentityRecord }>> {
    const ids: string[] = [];
    for await (const k of await this.kv.keys("id.>")) if (k.endsWith(LEAF_SUFFIX)) ids.push(k.slice("id.".length));
    const out: Array<{ who: Principal; rec: IdentityRecord }> = [];
    for (const id of ids) {
      const rec = await this.get(parsePrincipal(id));
      if (rec?.profile === "leaf") out.push({ who: parsePrincipal(id), rec });
    }
    return out;
  }

  /** Record a new credential; scope fields take the newest mint's values, `mintedBy` stays the first minter's. */
  async add(who: Principal, rec: Omit<IdentityRecord, "users">, user: IdentityRecord["users"][number]): Promise<IdentityRecord> {
    for (let attempt = 1; ; attempt++) {
      const { rec: prev, revision } = await this.read(who);
      const mintedBy = prev ? prev.mintedBy : rec.mintedBy;
      const next = IdentityRecord.parse({ ...rec, ...(mintedBy ? { mintedBy } : {}), users: [...(prev?.users ?? []), user] });
      try {
        if (revision === 0) await this.kv.create(this.key(who), JSON.stringify(next));
        else await this.kv.update(this.key(who), JSON.stringify(next), revision);
        if (user.via) await this.kv.put(`${VIA_PREFIX}.${user.via}.${principalId(who)}`, "");
        return next;
      } catch (err) {
        if (attempt >= MAX_ATTEMPTS) throw err;
        // Lost a race: read the winner's record and add to it.
      }
    }
  }

  /**
   * Every credential minted through `via` (a leaf host's credential), by name: what revoking it
   * must revoke too. Found by the index `via.<via>.<name>` that add() writes, so a revoke reads
   * only what went through that credential.
   */
  async mintedVia(via: Principal): Promise<Array<{ who: Principal; users: IdentityRecord["users"]; rec: IdentityRecord }>> {
    const prefix = `${VIA_PREFIX}.${principalId(via)}.`;
    const names: string[] = [];
    for await (const k of await this.kv.keys(`${prefix}>`)) names.push(k.slice(prefix.length));
    const out: Array<{ who: Principal; users: IdentityRecord["users"]; rec: IdentityRecord }> = [];
    for (const name of names) {
      const who = parsePrincipal(name);
      const rec = await this.get(who);
      const users = rec?.users.filter((u) => u.via === principalId(via)) ?? [];
      if (rec && users.length) out.push({ who, users, rec });
    }
    return out;
  }

  /**
   * Count a credential `minter` is about to mint against its limit: at most `limit` of its
   * credentials may be unexpired at once (revoked or not: each revoked one holds a place in the
   * account's revocation list until it expires). Kept under `quota.<minter>` as the expiry of
   * each; a compare-and-set like add(). Throws MintLimitError past the limit, recording nothing.
   */
  async reserveMint(minter: Principal, expiresAt: number, limit: number, now = Date.now()): Promise<void> {
    const key = `quota.${principalId(minter)}`;
    for (let attempt = 1; ; attempt++) {
      const e = await this.kv.get(key);
      const revision = e && e.operation === "PUT" ? e.revision : 0;
      const held = z
        .array(z.number())
        .catch([])
        .parse(e && e.operation === "PUT" ? e.json() : []);
      const live = held.filter((t) => t > now);
      if (live.length >= limit) throw new MintLimitError(principalId(minter), limit, Math.min(...live));
      const next = JSON.stringify([...live, expiresAt]);
      try {
        if (revision === 0) await this.kv.create(key, next);
        else await this.kv.update(key, next, revision);
        return;
      } catch (err) {
        if (attempt >= MAX_ATTEMPTS) throw err;
      }
    }
  }

  /**
   * May `who` read `channel`? Cotal's own service identities (`cotal_*`, never minted to
   * anyone) may; any other name without a record may not. An agent may read its own event
   * plane's history (its writer resumes the plane's sequence from it, docs/events.md); a reader
   * only its scope. Observers, people, admins and the operator's tool read every channel by design; a
   * manager (it supervises seats and needs none of what they say) and a leaf
   * host's credential read none.
   */
  async mayRead(who: Principal, channel: string): Promise<boolean> {
    const rec = await this.get(who);
    if (!rec) return who.actor.startsWith("cotal_");
    if (rec.profile === "agent") return rec.allowSubscribe.includes(channel) || channel === eventsChannelOf(who);
    // A reader has no plane of its own: its scope is all it reads.
    if (rec.profile === "reader") return rec.allowSubscribe.includes(channel);
    return READS_EVERY_CHANNEL.has(rec.profile);
  }
}

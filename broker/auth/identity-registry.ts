import type { KV } from "@nats-io/kv";
import { z } from "zod";
import { ChannelName, CotalError, describeIssues, eventsChannelOf, principalId, RoleName, type Principal } from "../../schemas/index.js";
import { PROFILES } from "./permissions.js";

/** What the mesh service minted for one principal (kept in the data account only). */
export const IdentityRecord = z.object({
  profile: z.enum(PROFILES),
  allowSubscribe: z.array(ChannelName),
  allowPublish: z.array(ChannelName),
  role: RoleName.optional(),
  /** Who minted the name first (a manager may mint and revoke only names it minted itself). */
  mintedBy: z.string().optional(),
  /** Every credential issued to this principal (revocation names them all). */
  users: z.array(
    z.object({
      pub: z.string().regex(/^U[A-Z2-7]{55}$/),
      issuedAt: z.number().int().nonnegative(),
      expiresAt: z.number().int().nonnegative().optional(),
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

/** How often a write retries after losing a race with another writer. */
const MAX_ATTEMPTS = 8;

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

  /** Record a new credential; scope fields take the newest mint's values, `mintedBy` stays the first minter's. */
  async add(who: Principal, rec: Omit<IdentityRecord, "users">, user: IdentityRecord["users"][number]): Promise<IdentityRecord> {
    for (let attempt = 1; ; attempt++) {
      const { rec: prev, revision } = await this.read(who);
      const mintedBy = prev ? prev.mintedBy : rec.mintedBy;
      const next = IdentityRecord.parse({ ...rec, ...(mintedBy ? { mintedBy } : {}), users: [...(prev?.users ?? []), user] });
      try {
        if (revision === 0) await this.kv.create(this.key(who), JSON.stringify(next));
        else await this.kv.update(this.key(who), JSON.stringify(next), revision);
        return next;
      } catch (err) {
        if (attempt >= MAX_ATTEMPTS) throw err;
        // Lost a race: read the winner's record and add to it.
      }
    }
  }

  /**
   * May `who` read `channel`? Cotal's own service identities (`cotal_*`, never minted to
   * anyone) may; any other name without a record may not. An agent may read its own event
   * plane's history (its writer resumes the plane's sequence from it, docs/events.md).
   */
  async mayRead(who: Principal, channel: string): Promise<boolean> {
    const rec = await this.get(who);
    if (!rec) return who.actor.startsWith("cotal_");
    if (rec.profile === "agent") return rec.allowSubscribe.includes(channel) || channel === eventsChannelOf(who);
    return true;
  }
}

import type { KV } from "@nats-io/kv";
import { principalId, type Principal } from "../../schemas/index.js";
import type { Profile } from "./permissions.js";

/** What the mesh service minted for one principal. */
export interface IdentityRecord {
  profile: Profile;
  allowSubscribe: string[];
  allowPublish: string[];
  role?: string;
  /** Every credential issued to this principal (revocation names them all). */
  users: Array<{ pub: string; issuedAt: number; expiresAt?: number }>;
}

/** Minted identities, kept in the members bucket under `id.<owner>.<actor>`. */
export class IdentityRegistry {
  constructor(private readonly kv: KV) {}

  private key(who: Principal): string {
    return `id.${principalId(who)}`;
  }

  async get(who: Principal): Promise<IdentityRecord | undefined> {
    const e = await this.kv.get(this.key(who));
    return e && e.operation === "PUT" ? e.json<IdentityRecord>() : undefined;
  }

  /** Record a new credential; scope fields take the newest mint's values. */
  async add(who: Principal, rec: Omit<IdentityRecord, "users">, user: IdentityRecord["users"][number]): Promise<IdentityRecord> {
    const prev = await this.get(who);
    const next: IdentityRecord = { ...rec, users: [...(prev?.users ?? []), user] };
    await this.kv.put(this.key(who), JSON.stringify(next));
    return next;
  }

  /** May `who` read `channel`? Unknown identities (open mesh, service users) may. */
  async mayRead(who: Principal, channel: string): Promise<boolean> {
    const rec = await this.get(who);
    if (!rec) return true;
    if (rec.profile === "agent") return rec.allowSubscribe.includes(channel);
    return true;
  }
}

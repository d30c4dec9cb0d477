import { connect, type NatsConnection } from "@nats-io/transport-node";
import { PROFILES, type Profile } from "../../schemas/index.js";
import { credsBytesAuthenticator, serverUrls } from "../connect.js";
import type { Logger } from "../log.js";
import { clientsAccount, type AuthStore } from "./auth-store.js";
import { PROFILE_LIMITS } from "./credential-limits.js";
import { readSecret } from "./secret-files.js";

/** What the server says of a client in `$SYS.ACCOUNT.<account>.CONNECT`/`DISCONNECT` and in CONNZ. */
interface ClientSeen {
  /** Connection id, per server. */
  id: number;
  /** The user's public key. */
  user?: string;
  /** The user JWT's tags (`cotal-profile:<profile>`, mint.ts credsTags). */
  tags?: string[];
  kind?: string;
}

const PROFILE_TAG = "cotal-profile:";

/** The profile a credential was minted with, from its tags; undefined for a credential without one. */
function profileOf(tags: string[] | undefined): Profile | undefined {
  const tag = tags?.find((t) => t.startsWith(PROFILE_TAG))?.slice(PROFILE_TAG.length);
  return (PROFILES as readonly string[]).includes(tag ?? "") ? (tag as Profile) : undefined;
}

/**
 * nats-server counts no single user's connections (credential-limits.ts), so the mesh service
 * does, as the system account: it follows every connect and disconnect of the space's clients
 * account and closes (`$SYS.REQ.SERVER.<id>.KICK`) each connection that puts a credential past its
 * profile's `connections`, the newest first. A client so closed may connect again and is closed
 * again; the credential's earlier connections are untouched.
 */
export class ConnectionWarden {
  /** Per user key: its live connections as `<server id>/<cid>`, oldest first. */
  private readonly live = new Map<string, string[]>();

  private constructor(
    private readonly nc: NatsConnection,
    private readonly account: string,
    private readonly log: Logger,
  ) {}

  /** Follow the space's clients account on the server at `server`, with the store's system user. */
  static async start(store: AuthStore, server: string, space: string, log: Logger): Promise<ConnectionWarden> {
    const nc = await connect({
      servers: serverUrls(server),
      name: "cotal-connection-warden",
      authenticator: credsBytesAuthenticator(readSecret(store.path("creds", "sys.creds"))),
      maxReconnectAttempts: -1,
      reconnectTimeWait: 250,
    });
    const warden = new ConnectionWarden(nc, store.accountKey(clientsAccount(space)).getPublicKey(), log);
    nc.subscribe(`$SYS.ACCOUNT.${warden.account}.CONNECT`, { callback: (_e, m) => warden.onEvent(m.json(), true) });
    nc.subscribe(`$SYS.ACCOUNT.${warden.account}.DISCONNECT`, { callback: (_e, m) => warden.onEvent(m.json(), false) });
    await nc.flush();
    await warden.catchUp();
    return warden;
  }

  /** Connections that were there before the warden: every server's CONNZ of the account. */
  private async catchUp(): Promise<void> {
    const answers = await this.nc.requestMany("$SYS.REQ.SERVER.PING.CONNZ", JSON.stringify({ acc: this.account, auth: true, limit: 100_000 }), {
      strategy: "timer",
      maxWait: 1_000,
    });
    for await (const m of answers) {
      const body = m.json<{
        server?: { id?: string };
        data?: { connections?: Array<{ cid: number; authorized_user?: string; tags?: string[]; kind?: string }> };
      }>();
      for (const c of body.data?.connections ?? []) {
        this.onEvent(
          { server: body.server, client: { id: c.cid, ...(c.authorized_user ? { user: c.authorized_user } : {}), ...(c.tags ? { tags: c.tags } : {}) } },
          true,
        );
      }
    }
  }

  private onEvent(event: { server?: { id?: string }; client?: ClientSeen }, connected: boolean): void {
    const c = event.client;
    const serverId = event.server?.id;
    if (!c?.user || !serverId || c.kind === "Leafnode") return;
    const key = `${serverId}/${c.id}`;
    const conns = (this.live.get(c.user) ?? []).filter((k) => k !== key);
    if (connected) conns.push(key);
    if (conns.length) this.live.set(c.user, conns);
    else this.live.delete(c.user);
    const profile = profileOf(c.tags);
    const bound = profile ? PROFILE_LIMITS[profile].connections : undefined;
    if (!connected || bound === undefined || conns.length <= bound) return;
    this.log.warn(
      { user: c.user, profile, connections: conns.length, bound },
      "a credential opened more connections than its profile may hold: closing the newest",
    );
    void this.kick(serverId, c.id, c.user, key);
  }

  private async kick(serverId: string, cid: number, user: string, key: string): Promise<void> {
    try {
      await this.nc.request(`$SYS.REQ.SERVER.${serverId}.KICK`, JSON.stringify({ cid }), { timeout: 2_000 });
    } catch (err) {
      this.log.warn({ err, user, cid }, "closing a connection past its credential's bound failed");
    }
    // Its DISCONNECT follows; until then it is not counted again.
    const conns = this.live.get(user)?.filter((k) => k !== key);
    if (conns?.length) this.live.set(user, conns);
    else this.live.delete(user);
  }

  async close(): Promise<void> {
    await this.nc.close();
  }
}

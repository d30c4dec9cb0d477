// What one credential may cost the broker, measured (docs/security.md, "What one credential may
// cost the broker"): for each profile handed to others, a fresh operator-mode nats-server with
// the config `cotal up` renders and the mesh service's connection warden, and one credential of
// that profile using every bound to the limit at once: its most connections and EXTRA more (which
// the warden closes), on each its most subscriptions, each subject as long as a protocol line may
// be, a message of its largest payload left half-sent (the server holds it), and then traffic it
// subscribed to while it reads nothing (the server queues up to its max_pending, then cuts the
// connection as a slow consumer). The server's RSS is read from /proc before, once all is held,
// at its peak (VmHWM) and after the credential has closed everything.
import { readFileSync } from "node:fs";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  AuthStore,
  clientsAccount,
  ConnectionWarden,
  DEFAULT_CLIENT_CONNECTIONS,
  logger,
  mintCreds,
  PROFILE_LIMITS,
  SERVER_MAX_PENDING,
  SERVICE_ACCOUNT_CONNECTIONS,
  type IdentitySpec,
  type Profile,
} from "../broker/internal.js";
import { patterns } from "../schemas/index.js";
import { NatsServer } from "../testbed/nats-server.js";
import { RawNats, RawRefusedError } from "../testbed/raw-nats.js";

const SPACE = "cost";
/** nats-server's max_control_line as `cotal up` renders it: the longest SUB line it reads. */
const CONTROL_LINE = 65_536;
/** Bytes of each message the feeder sends to what the credential subscribed to. */
const FEED_BYTES = 64 * 1024;
/** Connections tried past the credential's bound (the warden closes them). */
const EXTRA = 8;

/** One profile's figures, KiB of nats-server RSS. */
export interface CostRow {
  profile: Profile;
  connections: number;
  tried: number;
  subs: number;
  payload: number;
  baselineKiB: number;
  heldKiB: number;
  peakKiB: number;
  afterKiB: number;
  slowConsumersCut: number;
}

function status(pid: number, field: "VmRSS" | "VmHWM"): number {
  const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return Number(m?.[1] ?? NaN);
}

/** Who the credential is, and a subject it may subscribe to that `feeder` may publish on. */
function attacker(profile: Profile): { spec: IdentitySpec; inbox: string; flood: string; feeder: Profile } {
  const who =
    profile === "leaf" ? { owner: "local", actor: "hostb_leaf" } : profile === "cli" || profile === "mesh" ? undefined : { owner: "local", actor: "mallory" };
  const spec: IdentitySpec =
    profile === "cli" || profile === "mesh"
      ? { space: SPACE, who: profile === "mesh" ? { owner: "local", actor: "cotal_mesh" } : { owner: "local", actor: "cotal_cli" }, profile }
      : {
          space: SPACE,
          who: who!,
          profile,
          ...(profile === "agent" || profile === "reader" ? { allowSubscribe: ["general"] } : {}),
          ...(profile === "agent" ? { allowPublish: ["general"] } : {}),
        };
  // A leaf's rights are its host manager's: `hostb`'s inbox and presence.
  const inboxOwner = profile === "leaf" ? "_INBOX.local.hostb" : profile === "cli" || profile === "mesh" ? "_INBOX" : `_INBOX.local.${spec.who.actor}`;
  // Presence writes reach every profile but the mesh service (in the data account), which takes its own inbox.
  return profile === "mesh"
    ? { spec, inbox: inboxOwner, flood: "_INBOX.flood", feeder: "mesh" }
    : { spec, inbox: inboxOwner, flood: patterns.presenceKey(SPACE, { owner: "local", actor: "flood" }), feeder: "cli" };
}

async function monitor<T>(server: NatsServer, path: string): Promise<T> {
  const res = await fetch(`${server.monitorUrl}/${path}`);
  return (await res.json()) as T;
}

/** The connections the server holds open for one user of an account. */
async function liveConnections(server: NatsServer, account: string, user: string): Promise<number> {
  const connz = await monitor<{ connections?: Array<{ authorized_user?: string }> }>(server, `connz?acc=${account}&auth=true&limit=100000`);
  return (connz.connections ?? []).filter((c) => c.authorized_user === user).length;
}

async function measure(profile: Profile, maxConnections: number, log: (line: string) => void): Promise<CostRow> {
  const dir = mkdtempSync(join(tmpdir(), "cotal-cost-"));
  const store = await AuthStore.open(join(dir, "auth"));
  await store.ensureSpace(SPACE);
  const server = await NatsServer.start({ config: await store.serverConfig(join(dir, "resolver")), jetstream: { maxFileStore: "1GB" }, monitoring: true });
  const pid = server.pid!;
  const open: RawNats[] = [];
  const warden = await ConnectionWarden.start(store, server.url, SPACE, logger("bench"));
  try {
    const a = attacker(profile);
    const account = (spec: IdentitySpec) => store.accountKey(spec.profile === "mesh" ? SPACE : clientsAccount(SPACE)).getPublicKey();
    const mint = async (spec: IdentitySpec) => {
      const key =
        spec.profile === "mesh" ? store.accountKey(SPACE) : spec.profile === "leaf" ? store.leafScopeKey(SPACE, "local.hostb_leaf") : store.signingKey(SPACE);
      return mintCreds(spec, key, account(spec));
    };
    const creds = async (spec: IdentitySpec) => (await mint(spec)).creds;
    if (profile === "leaf") {
      // A leaf's rights are its scope's, in the clients account's JWT (leaf-scope.ts): its host manager's.
      const { leafPermissions } = await import("../broker/internal.js");
      store.setLeafScope(SPACE, "local.hostb_leaf", leafPermissions(SPACE, { owner: "local", actor: "hostb_leaf" }, []));
      await store.writeAccountJwt(clientsAccount(SPACE), {});
      const { pushSpaceAccounts } = await import("../broker/internal.js");
      await pushSpaceAccounts(store, server.url, SPACE);
    }
    const feederSpec = attacker(a.feeder).spec;
    const feeder = await RawNats.connect(server.url, await creds(feederSpec));
    open.push(feeder);
    const minted = await mint(a.spec);
    const mine = minted.creds;
    const { subs, payload } = PROFILE_LIMITS[profile];
    await new Promise((r) => setTimeout(r, 1_000));
    const baselineKiB = status(pid, "VmRSS");
    let tried = 0;
    const tries = Math.min(maxConnections, (PROFILE_LIMITS[profile].connections ?? Number.POSITIVE_INFINITY) + EXTRA);
    for (let i = 0; i < tries; i++) {
      let c: RawNats;
      try {
        c = await RawNats.connect(server.url, mine);
      } catch (err) {
        if (err instanceof RawRefusedError) break;
        throw err;
      }
      open.push(c);
      tried++;
      // One subscription the feeder reaches, the rest each as long as a SUB line may be.
      let lines = RawNats.sub(a.flood, 1);
      for (let sid = 2; sid <= subs; sid++) {
        const prefix = `${a.inbox}.${sid}.`;
        lines += RawNats.sub(prefix + "x".repeat(CONTROL_LINE - prefix.length - 64), sid);
      }
      const answer = await c.exchange(lines, 60_000);
      // One past the bound may be closed by the warden meanwhile.
      if (answer !== "PONG\r\n") {
        if (c.isClosed) continue;
        throw new Error(`subscribing as ${profile} answered ${answer}`);
      }
      // Half a message of the largest payload: the server keeps what came until the rest does.
      c.send(`PUB ${a.flood} ${payload}\r\n`);
      c.send(Buffer.alloc(payload - 1, 120));
      c.stopReading();
      if (open.length % 32 === 0) log(`  ${profile}: ${open.length - 1} connections tried`);
    }
    await new Promise((r) => setTimeout(r, 1_000));
    const heldKiB = status(pid, "VmRSS");
    // What the server still holds open of the credential's (a paused socket sees no close: ask it).
    const connections = await liveConnections(server, account(a.spec), minted.user.userPub);
    // Traffic on what every connection subscribed to, until the server has cut them all (or 4× what their queues hold passed).
    const budget = Math.ceil((4 * connections * SERVER_MAX_PENDING) / FEED_BYTES);
    for (let i = 0; i < budget && (await liveConnections(server, account(a.spec), minted.user.userPub)) > 0; i += 16) {
      const answer = await feeder.exchange(Buffer.concat(Array.from({ length: 16 }, () => RawNats.pub(a.flood, FEED_BYTES))), 60_000);
      if (answer !== "PONG\r\n") throw new Error(`the feeder was refused: ${answer}`);
    }
    const peakKiB = status(pid, "VmHWM");
    const slowConsumersCut = (await monitor<{ slow_consumers?: number }>(server, "varz")).slow_consumers ?? 0;
    for (const c of open) c.close();
    await new Promise((r) => setTimeout(r, 2_000));
    const afterKiB = status(pid, "VmRSS");
    return { profile, connections, tried, subs, payload, baselineKiB, heldKiB, peakKiB, afterKiB, slowConsumersCut };
  } finally {
    for (const c of open) c.close();
    await warden.close();
    await server.cleanup();
    rmSync(dir, { recursive: true, force: true });
  }
}

const MiB = (kib: number) => (kib / 1024).toFixed(0);

/**
 * Measure each profile on its own server; print a markdown table. `maxConnections` stops short of
 * the account's bound (a quick look); the worst case is measured without it.
 */
export async function credentialCost(profiles: Profile[], maxConnections = Number.POSITIVE_INFINITY): Promise<CostRow[]> {
  const rows: CostRow[] = [];
  for (const p of profiles) {
    console.error(`measuring ${p} …`);
    const row = await measure(p, maxConnections, (l) => console.error(l));
    console.error(JSON.stringify(row));
    rows.push(row);
  }
  console.log(
    `max_pending ${SERVER_MAX_PENDING / 1024 / 1024} MiB; clients account ${DEFAULT_CLIENT_CONNECTIONS} connections, data account ${SERVICE_ACCOUNT_CONNECTIONS}\n`,
  );
  console.log(
    "| profile | connections held (tried) | subscriptions per connection | payload | held (MiB) | peak (MiB) | after closing (MiB) | cut as slow consumers |",
  );
  console.log("|---|---|---|---|---|---|---|---|");
  for (const r of rows) {
    console.log(
      `| ${r.profile} | ${r.connections} (${r.tried}) | ${r.subs} | ${r.payload / 1024} KiB | ${MiB(r.heldKiB - r.baselineKiB)} | ${MiB(r.peakKiB - r.baselineKiB)} | ${MiB(r.afterKiB - r.baselineKiB)} | ${r.slowConsumersCut} |`,
    );
  }
  return rows;
}

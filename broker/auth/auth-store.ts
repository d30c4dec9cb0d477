import { mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import type { KeyPair } from "@nats-io/nkeys";
import { encodeAccount, encodeOperator, encodeUser, fmtCreds, type Account, type Permissions } from "@nats-io/jwt";
import { assertToken, CotalError } from "../../schemas/index.js";
import { newNkey, nkeyFromSeed } from "./native-nkeys.js";
import {
  CLIENT_LEAF_CONNECTIONS,
  clientAccountLimits,
  DATA_ACCOUNT_CONSUMERS,
  DEFAULT_CLIENT_CONNECTIONS,
  serverLimitLines,
  SERVICE_ACCOUNT_CONNECTIONS,
  userLimits,
} from "./credential-limits.js";
import { clientImports, dataExports } from "./space-accounts.js";
import { ensureSecretDir, readSecret, secretExists, writeSecret } from "./secret-files.js";

const dec = new TextDecoder();

/**
 * What a space's accounts may use in all: the data account's JetStream storage (`cotal up
 * --max-disk/--max-memory`) and the clients account's connections (`--max-connections`).
 */
export interface AccountStorageLimits {
  diskBytes: number;
  memoryBytes: number;
  /** Connections of the clients account, every minted identity together (credential-limits.ts). */
  connections: number;
}
export const DEFAULT_ACCOUNT_STORAGE: AccountStorageLimits = {
  diskBytes: 4 * 1024 ** 3,
  memoryBytes: 256 * 1024 ** 2,
  connections: DEFAULT_CLIENT_CONNECTIONS,
};

/** The clients account of a space: where every minted identity lives. */
export function clientsAccount(space: string): string {
  return `clients/${assertToken("space", "space", space)}`;
}

/** `SYS` and data accounts live in accounts/, clients accounts in clients/. */
function accountFile(account: string, ext: string): string {
  return account.startsWith("clients/") ? `${account}${ext}` : join("accounts", `${account}${ext}`);
}

/** Beside a clients account's files: what each leaf host may do (AuthStore.leafScopes). */
const LEAF_SCOPES = ".leaf-scopes.json";

/** A leaf principal id (`owner.actor`) as it may appear in a file name. */
function assertLeafId(leaf: string): string {
  if (!/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(leaf)) throw new Error(`not a leaf principal id: ${JSON.stringify(leaf)}`);
  return leaf;
}

/** A revocation would make the account's list longer than the server can take in one JWT. */
export class RevocationListFullError extends CotalError {
  constructor(account: string, count: number, max: number) {
    super(
      "revocation-list-full",
      `Revoking now would put ${count} revocations in ${account}'s JWT, more than the ${max} it may carry (the server refuses an account JWT over its max_payload); nothing was revoked.`,
      {
        remedy:
          "Revocations of expired credentials drop out by themselves: mint with --expires-in, and wait for them to expire. As a last resort, rotate the space's signing key (every credential must then be minted again).",
      },
    );
  }
}

/** The system account's name, and the user that pushes account updates (revocations). */
export const SYSTEM_ACCOUNT = "SYS";

/** How a store renders its accounts beyond what it holds. */
export interface AuthStoreOptions {
  /** The data account's pull exports' reply route, ms (default DELIVERY.pullReplyThresholdMs): a test shortens it. */
  pullReplyThresholdMs?: number;
}

/**
 * The operator, system account and per-space accounts of one mesh root, kept under
 * `.cotal/auth/` (folders 0700, files 0600). Created once; a second `up` reuses them.
 * Nothing here is ever printed, logged or put on a command line.
 */
export class AuthStore {
  private constructor(
    readonly dir: string,
    private readonly opts: AuthStoreOptions,
  ) {}

  /** Open the store at `dir`, creating the operator and system account on first use. */
  static async open(dir: string, opts: AuthStoreOptions = {}): Promise<AuthStore> {
    const store = new AuthStore(dir, opts);
    ensureSecretDir(dir);
    if (!secretExists(store.path("operator.nk"))) await store.createOperator();
    return store;
  }

  /** The store at `dir` if it was initialised, without creating anything (read-only use). */
  static existing(dir: string): AuthStore | undefined {
    return AuthStore.exists(dir) ? new AuthStore(dir, {}) : undefined;
  }

  /** True when `dir` holds an initialised store. */
  static exists(dir: string): boolean {
    return secretExists(join(dir, "operator.nk"));
  }

  path(...parts: string[]): string {
    return join(this.dir, ...parts);
  }

  private seed(file: string): KeyPair {
    return nkeyFromSeed(readSecret(this.path(file)));
  }

  operatorKey(): KeyPair {
    return this.seed("operator.nk");
  }

  operatorJwt(): string {
    return dec.decode(readSecret(this.path("operator.jwt")));
  }

  private async createOperator(): Promise<void> {
    const op = newNkey("operator");
    const sys = newNkey("account");
    writeSecret(this.path("operator.nk"), op.getSeed());
    writeSecret(this.path("accounts", `${SYSTEM_ACCOUNT}.nk`), sys.getSeed());
    writeSecret(this.path("operator.jwt"), await encodeOperator("cotal", op, { system_account: sys.getPublicKey() }));
    await this.writeAccountJwt(SYSTEM_ACCOUNT, {});
    const sysUser = newNkey("user");
    const jwt = await encodeUser("cotal_sys", sysUser, sys, {});
    writeSecret(this.path("creds", "sys.creds"), fmtCreds(jwt, sysUser));
  }

  /** The key of an account: `SYS`, a space's data account `<space>`, or `clients/<space>`. */
  accountKey(account: string): KeyPair {
    return this.seed(accountFile(account, ".nk"));
  }

  /** The key users of a space's clients account are minted with (the mesh service holds it). */
  signingKey(space: string): KeyPair {
    return this.seed(accountFile(clientsAccount(space), ".signing.nk"));
  }

  /**
   * The scoped signing key a leaf host's credential is minted with (created on first use): the
   * clients account's JWT carries what that leaf may do under it (leafScopes), so the hub applies
   * a changed scope by closing the leaf connection, which then comes back under the new one.
   */
  leafScopeKey(space: string, leaf: string): KeyPair {
    const file = accountFile(clientsAccount(space), `.leaf-${assertLeafId(leaf)}.signing.nk`);
    if (!secretExists(this.path(file))) writeSecret(this.path(file), newNkey("account").getSeed());
    return this.seed(file);
  }

  /** What each leaf of a space may do (leaf principal id → permissions), as its scope says. */
  leafScopes(space: string): Record<string, Partial<Permissions>> {
    const file = this.path(accountFile(clientsAccount(space), LEAF_SCOPES));
    return secretExists(file) ? (JSON.parse(dec.decode(readSecret(file))) as Record<string, Partial<Permissions>>) : {};
  }

  /** Set (or, with undefined, drop) a leaf's scope; the account JWT carries it from its next writeAccountJwt. */
  setLeafScope(space: string, leaf: string, perms: Partial<Permissions> | undefined): void {
    const scopes = this.leafScopes(space);
    if (perms) {
      this.leafScopeKey(space, leaf);
      scopes[assertLeafId(leaf)] = perms;
    } else delete scopes[leaf];
    writeSecret(this.path(accountFile(clientsAccount(space), LEAF_SCOPES)), JSON.stringify(scopes));
  }

  accountJwt(account: string): string {
    return dec.decode(readSecret(this.path(accountFile(account, ".jwt"))));
  }

  /** Both account JWTs of a space, data account first (a running server needs both). */
  spaceJwts(space: string): string[] {
    return [this.accountJwt(space), this.accountJwt(clientsAccount(space))];
  }

  /**
   * Create the space's two accounts if missing: the data account (JetStream, exports) and the
   * clients account (no JetStream, imports, a signing key). A store from before account
   * isolation gets its clients account now, and its data account loses the signing key every
   * earlier credential was minted with: those credentials stop working (mint them again).
   */
  async ensureSpace(space: string, limits: Partial<AccountStorageLimits> = {}): Promise<{ created: boolean }> {
    assertToken("space", "space", space);
    let created = false;
    if (!secretExists(this.path(accountFile(space, ".nk")))) {
      writeSecret(this.path(accountFile(space, ".nk")), newNkey("account").getSeed());
      created = true;
    }
    const clients = clientsAccount(space);
    if (!secretExists(this.path(accountFile(clients, ".nk")))) {
      writeSecret(this.path(accountFile(clients, ".nk")), newNkey("account").getSeed());
      writeSecret(this.path(accountFile(clients, ".signing.nk")), newNkey("account").getSeed());
      created = true;
    }
    const limitsFile = this.path(accountFile(space, ".limits.json"));
    const before = secretExists(limitsFile) ? dec.decode(readSecret(limitsFile)) : undefined;
    const want = JSON.stringify({ ...DEFAULT_ACCOUNT_STORAGE, ...(before ? (JSON.parse(before) as object) : {}), ...limits });
    if (want !== before) {
      writeSecret(limitsFile, want);
      created = true;
    }
    // A store from before an import changed (the control rail's import sharing who asks, which
    // the mesh service authorizes privileged commands by) is signed again with today's imports;
    // one from before its accounts carried limits, with today's limits.
    if (!created && (this.importsOutdated(space) || this.limitsOutdated(space))) created = true;
    if (created) {
      await this.writeAccountJwt(space, {});
      await this.writeAccountJwt(clients, {});
    }
    return { created };
  }

  /** The `nats` claims of an account's JWT as signed; undefined when unreadable. */
  private signedClaims(account: string): { imports?: Array<{ subject?: string; share?: boolean }>; limits?: Record<string, unknown> } | undefined {
    try {
      return (JSON.parse(Buffer.from(this.accountJwt(account).split(".")[1] ?? "", "base64url").toString("utf8")) as { nats?: object }).nats ?? {};
    } catch {
      return undefined;
    }
  }

  /** Do the clients account's signed imports differ from what clientImports() gives today? */
  private importsOutdated(space: string): boolean {
    const key = (i: { subject?: string; share?: boolean }) => `${i.subject}${i.share ? " share" : ""}`;
    const want = clientImports(space, this.accountKey(space).getPublicKey()).map(key).sort();
    const claims = this.signedClaims(clientsAccount(space));
    if (!claims) return true;
    const have = (claims.imports ?? []).map(key).sort();
    return JSON.stringify(have) !== JSON.stringify(want);
  }

  /** Do a space's account JWTs carry other limits than claims() gives today? */
  private limitsOutdated(space: string): boolean {
    return [space, clientsAccount(space)].some((account) => {
      const have = this.signedClaims(account)?.limits;
      return !have || Object.entries(this.claims(account, {}).limits ?? {}).some(([k, v]) => have[k] !== v);
    });
  }

  /** The JetStream storage limits of a space's data account. */
  storageLimits(space: string): AccountStorageLimits {
    const file = this.path(accountFile(space, ".limits.json"));
    return { ...DEFAULT_ACCOUNT_STORAGE, ...(secretExists(file) ? (JSON.parse(dec.decode(readSecret(file))) as object) : {}) };
  }

  /** Every account in this store: SYS, each space's data account and clients account. */
  async accounts(): Promise<string[]> {
    const { readdirSync, existsSync } = await import("node:fs");
    const list = (dir: string, prefix: string) =>
      existsSync(this.path(dir))
        ? readdirSync(this.path(dir))
            .filter((f) => f.endsWith(".nk") && !f.endsWith(".signing.nk"))
            .map((f) => prefix + f.slice(0, -3))
        : [];
    return [...list("accounts", ""), ...list("clients", "clients/")];
  }

  /**
   * The files (relative to the store) that make up the identity of one space, as far as they
   * exist: the operator, the system account and its user's credential, the space's data account
   * (key, JWT, storage limits, revocations) and its clients account (key, signing key, JWT,
   * revocations). No other space's accounts, and none of the service credentials (re-minted).
   */
  spaceIdentityFiles(space: string): string[] {
    const account = (a: string, exts: string[]) => exts.map((e) => accountFile(a, e));
    const revocations = [".revocations.json", ".revocation-expiry.json"];
    return [
      "operator.nk",
      "operator.jwt",
      ...account(SYSTEM_ACCOUNT, [".nk", ".jwt"]),
      join("creds", "sys.creds"),
      ...account(assertToken("space", "space", space), [".nk", ".jwt", ".limits.json", ...revocations]),
      ...account(clientsAccount(space), [".nk", ".signing.nk", ".jwt", ...revocations, LEAF_SCOPES]),
      ...Object.keys(this.leafScopes(space)).map((leaf) => accountFile(clientsAccount(space), `.leaf-${leaf}.signing.nk`)),
    ].filter((f) => secretExists(this.path(f)));
  }

  /** Revocations recorded for an account: user public key → unix seconds. */
  revocations(account: string): Record<string, number> {
    const file = this.path(accountFile(account, ".revocations.json"));
    return secretExists(file) ? (JSON.parse(dec.decode(readSecret(file))) as Record<string, number>) : {};
  }

  /** When each revoked credential expires (unix seconds), for those that do: its revocation may go then. */
  revocationExpiries(account: string): Record<string, number> {
    const file = this.path(accountFile(account, ".revocation-expiry.json"));
    return secretExists(file) ? (JSON.parse(dec.decode(readSecret(file))) as Record<string, number>) : {};
  }

  /**
   * Re-sign an account's JWT, adding revocations; returns the new JWT. `expiries` says when the
   * added credentials expire (unix seconds; absent: never). A revocation whose credential has
   * expired is dropped: the server refuses an expired JWT anyway, and the list, which travels in the
   * account JWT, stays bounded by the credentials still valid. More than `maxRevocations` left is
   * refused (RevocationListFullError) before anything is written, so the JWT never outgrows what
   * the server accepts (its max_payload) and every later revocation with it.
   */
  async writeAccountJwt(
    account: string,
    addRevocations: Record<string, number>,
    expiries: Record<string, number | undefined> = {},
    maxRevocations = Number.POSITIVE_INFINITY,
    now = Math.floor(Date.now() / 1000),
  ): Promise<string> {
    const revocations = { ...this.revocations(account), ...addRevocations };
    const expiry: Record<string, number> = { ...this.revocationExpiries(account) };
    for (const pub of Object.keys(addRevocations)) {
      const exp = expiries[pub];
      if (exp === undefined) delete expiry[pub];
      else expiry[pub] = exp;
    }
    let pruned = 0;
    for (const [pub, exp] of Object.entries(expiry)) {
      if (exp > now) continue;
      delete expiry[pub];
      if (pub in revocations) {
        delete revocations[pub];
        pruned++;
      }
    }
    const count = Object.keys(revocations).length;
    if (count > maxRevocations) throw new RevocationListFullError(account, count, maxRevocations);
    if (Object.keys(addRevocations).length || pruned) {
      writeSecret(this.path(accountFile(account, ".revocations.json")), JSON.stringify(revocations));
      writeSecret(this.path(accountFile(account, ".revocation-expiry.json")), JSON.stringify(expiry));
    }
    const key = this.accountKey(account);
    const jwt = await encodeAccount(account.replace("/", ":"), key, this.claims(account, revocations), { signer: this.operatorKey() });
    writeSecret(this.path(accountFile(account, ".jwt")), jwt);
    return jwt;
  }

  /** What each kind of account may do (every account needs explicit limits, as above). */
  private claims(account: string, revocations: Record<string, number>): Partial<Account> {
    const revoked = Object.keys(revocations).length ? { revocations } : {};
    // Every account needs explicit limits, or the server refuses every connection; their numbers are credential-limits.ts's.
    if (account === SYSTEM_ACCOUNT) return { limits: clientAccountLimits(SERVICE_ACCOUNT_CONNECTIONS, CLIENT_LEAF_CONNECTIONS) };
    if (account.startsWith("clients/")) {
      const space = account.slice("clients/".length);
      // No JetStream here: every stream lives in the data account, reached only by import.
      return {
        limits: clientAccountLimits(this.storageLimits(space).connections, CLIENT_LEAF_CONNECTIONS),
        signing_keys: [
          this.signingKey(space).getPublicKey(),
          ...Object.entries(this.leafScopes(space)).map(([leaf, template]) => ({
            kind: "user_scope" as const,
            key: this.leafScopeKey(space, leaf).getPublicKey(),
            role: leaf,
            // A leaf credential carries nothing of its own: its scope's template holds its bounds too.
            template: { ...template, ...userLimits("leaf") },
          })),
        ],
        imports: clientImports(space, this.accountKey(space).getPublicKey()),
        ...revoked,
      };
    }
    const storage = this.storageLimits(account);
    return {
      limits: {
        ...clientAccountLimits(SERVICE_ACCOUNT_CONNECTIONS, CLIENT_LEAF_CONNECTIONS),
        mem_storage: storage.memoryBytes,
        disk_storage: storage.diskBytes,
        streams: -1,
        consumer: DATA_ACCOUNT_CONSUMERS,
      },
      exports: dataExports(account, this.opts.pullReplyThresholdMs),
      ...revoked,
    };
  }

  /**
   * The nats-server configuration fragment for operator mode with a full resolver. The
   * resolver's folder holds public account JWTs the server writes itself, so it lives beside
   * the secrets folder, not in it.
   */
  async serverConfig(resolverDir = join(dirname(this.dir), "resolver")): Promise<string> {
    const accounts = await this.accounts();
    const preload = accounts.map((a) => `    ${this.accountKey(a).getPublicKey()}: ${this.accountJwt(a)}`).join("\n");
    mkdirSync(resolverDir, { recursive: true, mode: 0o700 });
    return [
      // A client's CONNECT carries its user JWT, whose permissions grow with its channels and
      // role: past the default 4 KiB control line the server drops the connection ("maximum
      // control line exceeded") and the client sees only a timeout.
      "max_control_line: 65536",
      ...serverLimitLines(),
      `operator: ${JSON.stringify(this.path("operator.jwt"))}`,
      `system_account: ${this.accountKey(SYSTEM_ACCOUNT).getPublicKey()}`,
      "resolver: {",
      "  type: full",
      `  dir: ${JSON.stringify(resolverDir)}`,
      "  allow_delete: true",
      '  interval: "2m"',
      "}",
      "resolver_preload: {",
      preload,
      "}",
      "",
    ].join("\n");
  }
}

import { mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { createAccount, createOperator, createUser, fromSeed, type KeyPair } from "@nats-io/nkeys";
import { encodeAccount, encodeOperator, encodeUser, fmtCreds, type Account } from "@nats-io/jwt";
import { assertToken } from "../../schemas/index.js";
import { ensureSecretDir, readSecret, secretExists, writeSecret } from "./secret-files.js";

const dec = new TextDecoder();

/** Limits every account needs, or the server refuses every connection (FIELD-NOTES). */
const CONNECTION_LIMITS = { conn: -1, subs: -1, payload: -1, data: -1, imports: -1, exports: -1, wildcards: true, leaf: -1 };
const JETSTREAM_LIMITS = { mem_storage: -1, disk_storage: -1, streams: -1, consumer: -1 };

/** The system account's name, and the user that pushes account updates (revocations). */
export const SYSTEM_ACCOUNT = "SYS";

/**
 * The operator, system account and per-space accounts of one mesh root, kept under
 * `.cotal/auth/` (folders 0700, files 0600). Created once; a second `up` reuses them.
 * Nothing here is ever printed, logged or put on a command line.
 */
export class AuthStore {
  private constructor(readonly dir: string) {}

  /** Open the store at `dir`, creating the operator and system account on first use. */
  static async open(dir: string): Promise<AuthStore> {
    const store = new AuthStore(dir);
    ensureSecretDir(dir);
    if (!secretExists(store.path("operator.nk"))) await store.createOperator();
    return store;
  }

  /** True when `dir` holds an initialised store. */
  static exists(dir: string): boolean {
    return secretExists(join(dir, "operator.nk"));
  }

  path(...parts: string[]): string {
    return join(this.dir, ...parts);
  }

  private seed(file: string): KeyPair {
    return fromSeed(readSecret(this.path(file)));
  }

  operatorKey(): KeyPair {
    return this.seed("operator.nk");
  }

  operatorJwt(): string {
    return dec.decode(readSecret(this.path("operator.jwt")));
  }

  private async createOperator(): Promise<void> {
    const op = createOperator();
    const sys = createAccount();
    writeSecret(this.path("operator.nk"), op.getSeed());
    writeSecret(this.path("accounts", `${SYSTEM_ACCOUNT}.nk`), sys.getSeed());
    writeSecret(this.path("operator.jwt"), await encodeOperator("cotal", op, { system_account: sys.getPublicKey() }));
    await this.writeAccountJwt(SYSTEM_ACCOUNT, {});
    const sysUser = createUser();
    const jwt = await encodeUser("cotal_sys", sysUser, sys, {});
    writeSecret(this.path("creds", "sys.creds"), fmtCreds(jwt, sysUser));
  }

  /** The account key of a space (or SYS). */
  accountKey(account: string): KeyPair {
    return this.seed(join("accounts", `${account}.nk`));
  }

  /** The signing key users of a space are minted with (the mesh service holds it at run time). */
  signingKey(space: string): KeyPair {
    return this.seed(join("signing", `${space}.nk`));
  }

  accountJwt(account: string): string {
    return dec.decode(readSecret(this.path("accounts", `${account}.jwt`)));
  }

  /** Create the space's account (with JetStream and a signing key) if it does not exist. */
  async ensureSpace(space: string): Promise<{ created: boolean }> {
    assertToken("space", "space", space);
    if (secretExists(this.path("accounts", `${space}.nk`))) return { created: false };
    writeSecret(this.path("accounts", `${space}.nk`), createAccount().getSeed());
    writeSecret(this.path("signing", `${space}.nk`), createAccount().getSeed());
    await this.writeAccountJwt(space, {});
    return { created: true };
  }

  /** Spaces with accounts in this store. */
  async accounts(): Promise<string[]> {
    const { readdirSync } = await import("node:fs");
    return readdirSync(this.path("accounts"))
      .filter((f) => f.endsWith(".nk"))
      .map((f) => f.slice(0, -3));
  }

  /** Revocations recorded for an account: user public key → unix seconds. */
  revocations(account: string): Record<string, number> {
    const file = this.path("accounts", `${account}.revocations.json`);
    return secretExists(file) ? (JSON.parse(dec.decode(readSecret(file))) as Record<string, number>) : {};
  }

  /** Re-sign an account's JWT, adding revocations; returns the new JWT. */
  async writeAccountJwt(account: string, addRevocations: Record<string, number>): Promise<string> {
    const revocations = { ...this.revocations(account), ...addRevocations };
    if (Object.keys(addRevocations).length) {
      writeSecret(this.path("accounts", `${account}.revocations.json`), JSON.stringify(revocations));
    }
    const key = this.accountKey(account);
    const claims: Partial<Account> =
      account === SYSTEM_ACCOUNT
        ? { limits: CONNECTION_LIMITS }
        : {
            limits: { ...CONNECTION_LIMITS, ...JETSTREAM_LIMITS },
            signing_keys: [this.signingKey(account).getPublicKey()],
            ...(Object.keys(revocations).length ? { revocations } : {}),
          };
    const jwt = await encodeAccount(account, key, claims, { signer: this.operatorKey() });
    writeSecret(this.path("accounts", `${account}.jwt`), jwt);
    return jwt;
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
      `operator: ${JSON.stringify(this.path("operator.jwt"))}`,
      `system_account: ${this.accountKey(SYSTEM_ACCOUNT).getPublicKey()}`,
      "resolver: {",
      "  type: full",
      `  dir: ${JSON.stringify(resolverDir)}`,
      "  allow_delete: true",
      "  interval: \"2m\"",
      "}",
      "resolver_preload: {",
      preload,
      "}",
      "",
    ].join("\n");
  }
}

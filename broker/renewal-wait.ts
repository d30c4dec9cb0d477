import { AuthorizationError, UserAuthenticationExpiredError, type ConnectionOptions, type NatsConnection } from "@nats-io/transport-node";
import { logger } from "./log.js";

/** How often a connection waiting for its credential file to be renewed presents it again, ms. */
export const RENEWAL_RETRY_MS = 2_000;
/** The reconnect wait otherwise (connectMesh's), and its jitter, ms. */
const RECONNECT_WAIT_MS = 250;
const RECONNECT_JITTER_MS = 100;
/** Refusals in a row of a credential that has not expired before the connection ends (nats.js's own rule). */
const REFUSALS_OF_A_VALID_CREDENTIAL = 2;

/**
 * The reconnect policy of a long-lived service whose `.creds` file another process renews (the host
 * manager's, renewed by `cotal up`): a credential renewed late, after the server cut the expired
 * connection, must still bring the service back. nats.js ends a connection after two refusals in a
 * row, and the first reconnect after the cut presents the file as it is then (the expired bytes);
 * so the service would stop although the renewed file came a moment later (docs/security.md,
 * Credential lifetime and renewal).
 *
 * Here a refusal of a credential that has expired is waited out: the file is presented again every
 * RENEWAL_RETRY_MS until it holds one the server takes. A credential that has not expired and is
 * refused twice in a row (revoked, or of another mesh) ends the connection, as nats.js would: that
 * is no renewal to wait for.
 */
export class RenewalWait {
  /** The credential the connection presented last (the authenticator reports it). */
  private presented: Uint8Array;
  private expiredRefusal = false;
  /** The expired bytes the wait was last logged for: one warning per credential, not per retry. */
  private warnedFor?: Uint8Array;
  private validRefusals = 0;
  private readonly log;

  constructor(
    private readonly file: string,
    first: Uint8Array,
    /** Whether a credential's own expiry has passed (broker/connect.ts: its JWT's `exp`). */
    private readonly hasExpired: (creds: Uint8Array) => boolean,
  ) {
    this.presented = first;
    this.log = logger("connection");
  }

  /** Called by the authenticator with the bytes it presents. */
  present(creds: Uint8Array): void {
    this.presented = creds;
  }

  /** The connect options that hand the reconnect decision to this policy. */
  options(): Partial<ConnectionOptions> {
    return {
      ignoreAuthErrorAbort: true,
      reconnectDelayHandler: () => (this.expiredRefusal ? RENEWAL_RETRY_MS : RECONNECT_WAIT_MS + Math.random() * RECONNECT_JITTER_MS),
    };
  }

  /** Follow the connection's refusals and reconnects until it closes. */
  watch(nc: NatsConnection): void {
    void (async () => {
      for await (const s of nc.status()) {
        if (s.type === "reconnect") {
          if (this.expiredRefusal) this.log.info(`the mesh took the credential in ${this.file}; connected again`);
          this.expiredRefusal = false;
          this.validRefusals = 0;
        } else if (s.type === "error" && (s.error instanceof AuthorizationError || s.error instanceof UserAuthenticationExpiredError)) {
          this.refused(nc, s.error);
        }
      }
    })();
  }

  private refused(nc: NatsConnection, err: Error): void {
    // The server says so when it cuts a connection at its expiry; a refused reconnect only says
    // "Authorization Violation", and the bytes it presented tell.
    if (err instanceof UserAuthenticationExpiredError || this.hasExpired(this.presented)) {
      if (!this.warnedFor || !Buffer.from(this.warnedFor).equals(this.presented)) {
        this.warnedFor = this.presented;
        this.log.warn(
          { retryMs: RENEWAL_RETRY_MS },
          `the mesh refused this connection's credential: it expired. Presenting ${this.file} again until it holds a renewed one (\`cotal up\` renews the host manager's)`,
        );
      }
      this.expiredRefusal = true;
      this.validRefusals = 0;
      return;
    }
    this.expiredRefusal = false;
    if (++this.validRefusals < REFUSALS_OF_A_VALID_CREDENTIAL) return;
    this.log.error({ err }, "the mesh refused this connection's credential, which has not expired (revoked, or not this mesh's): closing the connection");
    void nc.close();
  }
}

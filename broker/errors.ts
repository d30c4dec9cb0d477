import { CotalError } from "../schemas/index.js";

/** The mesh could not be reached (no server at the URL, refused credentials…). */
export class MeshUnavailableError extends CotalError {
  constructor(server: string, cause: unknown) {
    super("mesh-unavailable", `Cannot reach the mesh at ${server}.`, {
      remedy: "Nothing answers there: start the mesh with `cotal up` on its host, or check --server / COTAL_SERVER.",
      cause,
    });
  }
}

/**
 * The server refused the credential at connect. nats-server says only "Authorization
 * Violation"; `reason` is what the client could tell: no credential was given, it is
 * expired, or it was refused (revoked, or not a credential of this mesh).
 */
export class AuthenticationRefusedError extends CotalError {
  constructor(
    readonly server: string,
    readonly reason: "no-credential" | "expired" | "refused",
    cause: unknown,
  ) {
    super("authentication-refused", `The mesh at ${server} refused the credential (${reason}).`, { cause });
  }
}

/** A stream exists with a configuration that conflicts in a way that matters. */
export class StreamConflictError extends CotalError {
  constructor(
    readonly stream: string,
    readonly differences: string[],
  ) {
    super("stream-conflict", `Stream ${stream} exists with a conflicting configuration: ${differences.join("; ")}.`, {
      remedy: `Cotal will not recreate it (that would lose data). Inspect it, back it up, and delete it yourself (\`nats stream rm ${stream}\`) if you want Cotal to provision it afresh.`,
    });
  }
}

/** A mention named someone who is not in the roster: nothing was sent. */
export class UnknownMentionError extends CotalError {
  constructor(readonly names: string[]) {
    super("unknown-mention", `Unknown mention${names.length > 1 ? "s" : ""}: ${names.join(", ")}; nothing was sent.`, {
      remedy: "Mention only names shown in the roster (`cotal roster`).",
    });
  }
}

/** An operation that needs a joined endpoint was called before join() or after leave(). */
export class NotJoinedError extends CotalError {
  constructor(what: string) {
    super("not-joined", `Cannot ${what}: this endpoint has not joined the mesh.`, { remedy: "Call join() first." });
  }
}

/** A control call failed; `outcome` says whether the callee did the work. */
export class ControlCallError extends CotalError {
  constructor(
    readonly command: string,
    code: string,
    message: string,
    readonly outcome: "executed" | "not-executed" | "unknown",
    cause?: unknown,
  ) {
    super(code, `${command}: ${message}`, { cause });
  }
}

/**
 * The mesh service did not answer a control call: nobody serves the subject (`no-responders`)
 * or no reply came in time (`timeout`).
 */
export class MeshServiceUnavailableError extends CotalError {
  constructor(
    command: string,
    cause: unknown,
    readonly reason: "no-responders" | "timeout" = "timeout",
  ) {
    super(
      "mesh-service-unavailable",
      reason === "no-responders" ? `The mesh service is not running (nobody serves ${command}).` : `The mesh service did not answer ${command} in time.`,
      { remedy: "Run `cotal up` on the mesh host: it starts (or repairs) the mesh service.", cause },
    );
  }
}

/** The broker refused a publish or subscribe on `subject` for this credential. */
export class PermissionDeniedError extends CotalError {
  constructor(
    readonly operation: "publish" | "subscribe",
    readonly subject: string,
    cause?: unknown,
  ) {
    super("permission-denied", `The broker refused to let this credential ${operation} on ${subject}.`, {
      remedy: "Use a credential whose permissions include it (`cotal mint` with --allow-subscribe / --allow-publish), or ask the mesh admin.",
      cause,
    });
  }
}

/** The connection to the mesh is closed or draining: the call was not made. */
export class ConnectionClosedError extends CotalError {
  constructor(what: string, cause?: unknown) {
    super("connection-closed", `Cannot ${what}: the connection to the mesh is closed.`, {
      remedy: "Connect again (a new endpoint or command); check the server is up with `cotal status`.",
      cause,
    });
  }
}

/** join() did not complete: nothing of it was left behind (presence left, subscriptions removed). */
export class JoinFailedError extends CotalError {
  constructor(
    readonly step: string,
    cause: unknown,
  ) {
    super("join-failed", `Joining the mesh failed while ${step}: ${cause instanceof Error ? cause.message : String(cause)}`, {
      remedy: "Check that the mesh service runs (`cotal status`) and that this credential may bind its own inbox; then join again.",
      cause,
    });
  }
}

/** A durable consumer this endpoint reads stopped and could not be re-established. */
export class ConsumerLostError extends CotalError {
  constructor(
    readonly stream: string,
    readonly durable: string,
    cause?: unknown,
  ) {
    super("consumer-lost", `Stopped receiving from ${stream}/${durable}: the consumer is gone and could not be re-created.`, {
      remedy: "Leave and join again; if it keeps failing, check the mesh service (`cotal status`).",
      cause,
    });
  }
}

/** The broker ended a quiet pull (broker/quiet-pull.ts): its consumer was deleted or is missing. */
export class PullEndedError extends CotalError {
  constructor(
    readonly stream: string,
    readonly durable: string,
    readonly reason: string,
  ) {
    super("pull-ended", `The broker ended the pull on ${stream}/${durable}: ${reason}.`, {
      remedy: "Nothing to do: the endpoint re-creates the consumer and pulls again (see its consumer status).",
    });
  }
}

/**
 * The broker did not confirm a delivery's ack. The message was handled all the same: when the
 * broker hands it out again, the endpoint acks the copy without delivering it twice.
 */
export class AckUnconfirmedError extends CotalError {
  constructor(
    readonly count: number,
    cause?: unknown,
  ) {
    super("ack-unconfirmed", `The broker did not confirm the ack of ${count} message(s).`, {
      remedy:
        "Nothing to do for the message: a copy the broker redelivers is acked again, not delivered twice. If it keeps happening, check the mesh (`cotal status --components`).",
      cause,
    });
  }
}

/** Which limit refused a write (see docs/security.md "Storage limits"). */
export interface StorageLimit {
  /** The stream or bucket that refused, e.g. `DM_<space>` or `cotal_presence_<space>`. */
  store: string;
  /** The limit in words, e.g. "its byte limit" or "the largest value it takes". */
  limit: string;
  /** The limit's size when it is fixed or known (e.g. "16384 bytes"); configurable limits say their default. */
  size?: string;
  /** The `cotal up` flag that raises it, when one does. */
  flag?: string;
  /** What frees room by itself, when waiting helps (default: waiting messages being handed over). */
  wait?: string;
}

/** The broker refused to store a message: a storage limit is reached. Nothing was stored. */
export class StorageLimitError extends CotalError {
  constructor(subject: string, which: StorageLimit, cause?: unknown) {
    const size = which.size ? ` (${which.size})` : "";
    const broker = cause instanceof Error ? ` (the broker: ${cause.message})` : "";
    super(
      "storage-limit",
      `${which.store} refused to store this message: ${which.limit}${size} is reached${broker}; nothing was stored, and what is stored is kept.`,
      {
        remedy: which.flag
          ? `Wait until ${which.wait ?? "waiting messages are handed over"}, or raise the limit: \`cotal down\`, then \`cotal up ${which.flag}\`.`
          : "This limit is fixed: send less (split the content, or attach a file: `cotal send --attach`).",
        cause,
      },
    );
    this.subject = subject;
    this.which = which;
  }
  readonly subject: string;
  readonly which: StorageLimit;
}

import { CotalError } from "../schemas/index.js";

/** The mesh could not be reached (no server at the URL, refused credentials…). */
export class MeshUnavailableError extends CotalError {
  constructor(server: string, cause: unknown) {
    super("mesh-unavailable", `Cannot reach the mesh at ${server}.`, {
      remedy: "Start it with `cotal up` (or pass --server / COTAL_SERVER), and check --creds / COTAL_CREDS.",
      cause,
    });
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

/** The mesh service did not answer a control call. */
export class MeshServiceUnavailableError extends CotalError {
  constructor(command: string, cause: unknown) {
    super("mesh-service-unavailable", `The mesh service did not answer ${command}.`, {
      remedy: "Run `cotal up` on the mesh host: it starts (or repairs) the mesh service.",
      cause,
    });
  }
}

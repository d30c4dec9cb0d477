import { CotalError } from "../schemas/index.js";

/** The launch configuration is unusable (both forms set, an unsafe or invalid material file…). */
export class LaunchError extends CotalError {
  constructor(message: string, options: { remedy?: string; cause?: unknown } = {}) {
    super("bad-launch", message, options);
  }
}

/** Another live connector on this host already holds the principal: this one refuses to consume. */
export class CustodyHeldError extends CotalError {
  constructor(
    readonly principal: string,
    readonly socketPath: string,
  ) {
    super("custody-held", `Another connector on this host already holds ${principal} (control socket ${socketPath} answers).`, {
      remedy:
        "One session per name per host consumes its mail. To run two sessions, start the second under another name: " +
        "with a minted credential, mint one for it (`cotal mint <name> --profile agent …`) and set COTAL_CREDS to that file; " +
        "without one, set COTAL_NAME=<another name>. Or stop the other session first.",
    });
  }
}

/** The control directory is not private to this user (wrong owner or mode). */
export class UnsafeControlDirError extends CotalError {
  constructor(
    readonly dir: string,
    detail: string,
  ) {
    super("unsafe-control-dir", `The connector's control directory ${dir} is not private: ${detail}.`, {
      remedy: `Remove it (it is recreated with mode 0700), or point COTAL_CONTROL_DIR at a directory only you can use.`,
    });
  }
}

/** Process exit codes of the connector entry point. */
export const CONNECTOR_EXIT = {
  ok: 0,
  /** Could not reach or join the mesh. */
  mesh: 1,
  /** The launch configuration was refused. */
  launch: 2,
  /** Another connector holds the principal on this host. */
  custody: 3,
} as const;

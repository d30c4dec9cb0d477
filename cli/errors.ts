import { CotalError, InvalidTokenError, PayloadTooLargeError, ValidationError } from "../schemas/index.js";
import { InsecureSecretError, InvalidCredsError, MeshServiceUnavailableError, MeshUnavailableError, UnknownMentionError } from "../broker/index.js";

/**
 * Exit codes of every `cotal` command (documented in docs/cli.md):
 * 0 done; 1 the operation failed; 2 the input was wrong (fix the command line);
 * 3 no mesh was found, or it did not answer.
 */
export const EXIT = {
  ok: 0,
  failed: 1,
  usage: 2,
  unreachable: 3,
} as const;
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** The command line was wrong: a flag, an argument or a name. Exit code 2. */
export class UsageError extends CotalError {
  constructor(message: string, options: { remedy?: string; cause?: unknown } = {}) {
    super("usage", message, options);
  }
}

/** No mesh could be located from the flags, the environment or a `.cotal/` folder. Exit code 3. */
export class MeshNotFoundError extends CotalError {
  constructor(cwd: string) {
    super("mesh-not-found", `No mesh found: there is no .cotal/mesh.json in ${cwd} or any folder above it.`, {
      remedy: "Run `cotal up` in your project folder, or pass --server URL and --space NAME (or set COTAL_SERVER and COTAL_SPACE).",
    });
  }
}

/** Something failed that is neither bad input nor an unreachable mesh. Exit code 1. */
export class CommandFailedError extends CotalError {
  constructor(message: string, options: { remedy?: string; cause?: unknown } = {}) {
    super("failed", message, options);
  }
}

/** The command needs the mesh service and it did not answer. Exit code 3. */
export class MeshServiceDownError extends CotalError {
  constructor(message: string, options: { remedy?: string; cause?: unknown } = {}) {
    super("mesh-service-unavailable", message, options);
  }
}

/** The exit code an error maps to. */
export function exitCodeOf(err: unknown): ExitCode {
  if (
    err instanceof UsageError ||
    err instanceof InvalidTokenError ||
    err instanceof ValidationError ||
    err instanceof UnknownMentionError ||
    err instanceof PayloadTooLargeError ||
    err instanceof InvalidCredsError ||
    err instanceof InsecureSecretError
  ) {
    return EXIT.usage;
  }
  if (err instanceof MeshNotFoundError || err instanceof SpaceNotProvisionedError || err instanceof MeshUnavailableError || err instanceof MeshServiceUnavailableError || err instanceof MeshServiceDownError) {
    return EXIT.unreachable;
  }
  return EXIT.failed;
}

/** One or two lines for stderr: what went wrong (the message already carries the remedy). */
export function describeError(err: unknown): string {
  if (err instanceof CotalError) {
    const cause = err.cause instanceof Error && !(err.cause instanceof CotalError) ? ` (${err.cause.message})` : "";
    return `cotal: ${err.message}${cause}`;
  }
  if (err instanceof Error) return `cotal: ${err.message}`;
  return `cotal: ${String(err)}`;
}

/** The server answers but the space was never provisioned on it. Exit code 3. */
export class SpaceNotProvisionedError extends CotalError {
  constructor(space: string, server: string, cause?: unknown) {
    super("space-not-provisioned", `Space ${JSON.stringify(space)} does not exist on ${server}.`, {
      remedy: "Run `cotal up --space " + space + "` on the mesh host, or pass the right --space.",
      cause,
    });
  }
}

import type { PermissionViolationError } from "@nats-io/transport-node";
import { CotalError, InvalidTokenError, PayloadTooLargeError, ValidationError } from "../../schemas/index.js";
import {
  AuthenticationRefusedError,
  AuthStore,
  clientsAccount,
  ControlCallError,
  InsecureSecretError,
  InvalidCredsError,
  MeshServiceUnavailableError,
  MeshUnavailableError,
  PermissionDeniedError,
  permissionViolation,
  UnknownMentionError,
} from "../../broker/index.js";
import { activeTarget, credentialLabel, credentialScope, type CredentialScope } from "../identity/credential-scope.js";

/**
 * Exit codes of every `cotal` command (documented in docs/cli.md, "Output, logs and exit codes"):
 * 0 done; 1 the operation failed; 2 the input was wrong (fix the command line); 3 no mesh was
 * found or the server cannot be reached; 4 the server refused the credential; 5 the credential
 * may not do this; 6 the mesh service did not answer.
 */
export const EXIT = {
  ok: 0,
  failed: 1,
  usage: 2,
  unreachable: 3,
  authentication: 4,
  permission: 5,
  meshService: 6,
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

/** The credential is for another space than the one the command acts in. Exit code 4. */
export class WrongSpaceError extends CotalError {
  constructor(scope: CredentialScope, space: string) {
    super("wrong-space", `${capital(credentialLabel(scope))} was minted for space ${JSON.stringify(scope.space)}, not ${JSON.stringify(space)}.`, {
      remedy: `Leave --space out (or pass --space ${scope.space}), or use a credential minted for ${space} (\`cotal mint NAME --space ${space}\` on the mesh host).`,
    });
  }
}

/**
 * A seat refused an answer to its permission ask (docs/cli.md, `cotal approve`): `not-allowed` is
 * exit code 5 (this principal may not answer that seat's asks); anything else, 1.
 */
export class ApprovalRefusedError extends CotalError {
  constructor(code: string, message: string, by: string, seat: string) {
    super(code === "not-allowed" ? "approval-not-allowed" : `approval-${code}`, `${seat} refused the answer of ${by} (${code}): ${message}`, {
      remedy:
        code === "not-allowed"
          ? `Answer as its owner or the person at the mesh host, or have the operator mint you with the right (\`cotal mint <you> --profile person --approve ${seat.split(".")[1] ?? seat} --replace\`).`
          : "List the open asks again with `cotal approvals`.",
    });
  }
}

/** What this credential's profile may not do, said before anything is sent. Exit code 5. */
export class ProfileRefusedError extends CotalError {
  constructor(scope: CredentialScope | undefined, whatItMayNot: string) {
    super("permission-refused", `${capital(credentialLabel(scope))} may not ${whatItMayNot}.`, {
      remedy: `${scope?.profile ? profileMay(scope.profile) + " " : ""}Use a credential whose profile allows it (see \`cotal mint --help\`), or ask the mesh admin.`,
    });
  }
}

/**
 * Refuse, before anything is sent, a command the credential's profile cannot do (`allowed`
 * lists the profiles that may; `operator` is the mesh host's own credential). A credential
 * that does not say its profile, and open meshes (no credential), pass: the broker decides.
 */
export function requireProfile(creds: string | undefined, allowed: readonly string[], whatItMayNot: string): void {
  const scope = creds ? credentialScope(creds) : undefined;
  if (scope?.profile && !allowed.includes(scope.profile)) throw new ProfileRefusedError(scope, whatItMayNot);
}

/** Profiles that act as someone: send and listen (observers and admins only read). */
export const SENDERS = ["agent", "person", "operator", "manager"] as const;

/** What each profile may do, for refusals. */
export function profileMay(profile: string): string {
  const may: Record<string, string> = {
    agent:
      "An agent credential posts on its --allow-publish channels, DMs and anycasts as itself, and reads its --allow-subscribe channels, its DMs, the roster and history within that scope.",
    reader: "A reader credential reads its --allow-subscribe channels and event planes (live and history) and the roster; it sends nothing and has no DMs.",
    observer: "An observer credential reads every channel, history and the roster; it sends nothing and has no DMs.",
    person:
      "A person credential posts on every channel, DMs and anycasts as itself, and reads every channel and event plane, its own DMs, the roster and history.",
    admin: "An admin credential reads everything, including DMs and anycasts; it sends nothing.",
    operator: "The operator credential acts for people (--impersonate), reads everything and configures channels.",
  };
  return may[profile] ?? "";
}

function capital(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

/** Control-rail error codes that mean "this credential may not", not "it failed". */
const REFUSAL_CODES = new Set(["read-denied", "not-allowed", "role-not-granted", "permission-denied"]);

function isPermission(err: unknown): boolean {
  return err instanceof PermissionDeniedError || err instanceof ProfileRefusedError || permissionViolation(err) !== undefined;
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
  if (err instanceof AuthenticationRefusedError || err instanceof WrongSpaceError) return EXIT.authentication;
  if (isPermission(err) || (err instanceof CotalError && isPermission(err.cause))) return EXIT.permission;
  if (err instanceof ApprovalRefusedError && err.code === "approval-not-allowed") return EXIT.permission;
  // The mesh service's own refusals of this caller (a channel it may not read, a name it may not mint).
  if (err instanceof ControlCallError && REFUSAL_CODES.has(err.code)) return EXIT.permission;
  if (err instanceof MeshServiceUnavailableError || err instanceof MeshServiceDownError) return EXIT.meshService;
  if (err instanceof MeshNotFoundError || err instanceof SpaceNotProvisionedError || err instanceof MeshUnavailableError) return EXIT.unreachable;
  return EXIT.failed;
}

/** One or two lines for stderr: what went wrong and the fix that fits. */
export function describeError(err: unknown): string {
  if (err instanceof AuthenticationRefusedError) return `cotal: ${authRefusal(err)}`;
  if (err instanceof PayloadTooLargeError) {
    return `cotal: The message is ${err.size} bytes, over the limit of ${err.limit} bytes (${Math.floor(err.limit / 1024)} KiB); nothing was sent. Send large content as a file with \`--attach FILE\` (stored in the mesh, fetched with \`cotal fetch\`), or split the text.`;
  }
  // The broker's refusal, typed by us or by nats.js (a request error's cause, for a JetStream publish).
  const denied =
    err instanceof PermissionDeniedError ? err : err instanceof CotalError && err.cause instanceof PermissionDeniedError ? err.cause : permissionViolation(err);
  if (denied) return `cotal: ${permissionRefusal(denied)}`;
  if (err instanceof CotalError) {
    // A cause the message already says (a sentence built around it) is not said twice.
    const cause = err.cause instanceof Error && !(err.cause instanceof CotalError) && !err.message.includes(err.cause.message) ? ` (${err.cause.message})` : "";
    return `cotal: ${err.message}${cause}`;
  }
  const fs = fileSystemFailure(err);
  if (fs) return `cotal: ${fs}`;
  if (err instanceof Error) return `cotal: ${err.message}`;
  return `cotal: ${String(err)}`;
}

/** What a file-system call may not do, by its error code, and the fix. */
const FS_CAUSES: Record<string, { why: string; fix: string }> = {
  EACCES: {
    why: "permission denied",
    fix: "Run the command as a user who may write there (`ls -ld` shows the owner and mode), in a folder of your own, or give the folder write permission.",
  },
  EPERM: { why: "the operation is not permitted", fix: "Check the folder's owner and mode (`ls -ld`), or use a folder of your own." },
  EROFS: { why: "the file system is read-only", fix: "Use a folder on a writable file system." },
  ENOSPC: { why: "the disk is full", fix: "Free space there (`df -h` shows how much is left), or use a folder on another disk." },
  EDQUOT: { why: "your disk quota is used up", fix: "Free space in your quota, or use a folder elsewhere." },
  ENOTDIR: { why: "a part of the path is a file, not a folder", fix: "Move that file aside, or use another path." },
  ENOENT: { why: "a folder on the way does not exist", fix: "Create it first, or use another path." },
};

/** A file-system error Node threw (code, syscall, path) as a sentence naming the path, the cause and the fix. */
function fileSystemFailure(err: unknown): string | undefined {
  const e = err as NodeJS.ErrnoException;
  if (!(err instanceof Error) || typeof e.code !== "string" || !e.syscall || !e.path) return undefined;
  const cause = FS_CAUSES[e.code];
  if (!cause) return undefined;
  return `Cannot ${e.syscall} ${e.path}: ${cause.why} (${e.code}). ${cause.fix}`;
}

function activeScope(): CredentialScope | undefined {
  const creds = activeTarget()?.creds;
  return creds ? credentialScope(creds) : undefined;
}

function permissionRefusal(err: PermissionDeniedError | PermissionViolationError): string {
  const scope = activeScope();
  const op = err.operation === "subscription" || err.operation === "subscribe" ? "subscribe to" : "publish on";
  const may = scope?.profile ? ` ${profileMay(scope.profile)}` : "";
  return `${capital(credentialLabel(scope))} may not ${op} ${err.subject}: the broker refused it.${may} Use a credential whose profile allows it (\`cotal mint --help\`), or ask the mesh admin.`;
}

/** The sentence for a refused credential: nats-server says only "Authorization Violation". */
function authRefusal(err: AuthenticationRefusedError): string {
  const scope = activeScope();
  const label = credentialLabel(scope);
  const renew = `Ask the mesh admin for a new one (\`cotal mint ${scope?.principal?.split(".")[1] ?? "NAME"} --replace …\` on the mesh host), then pass it with --creds.`;
  switch (err.reason) {
    case "no-credential":
      return `The mesh at ${err.server} requires a credential and none was given. Pass --creds FILE (or set COTAL_CREDS) with one minted by \`cotal mint\` on the mesh host.`;
    case "expired":
      return `The mesh at ${err.server} refused ${label}: it expired${scope?.expiresAt ? ` at ${new Date(scope.expiresAt).toISOString()}` : ""}. ${renew}`;
    case "refused": {
      const why = revokedHere(scope) ? "it was revoked" : "it was revoked, or it was minted by another mesh";
      return `The mesh at ${err.server} refused ${label}: ${why}. ${renew}`;
    }
  }
}

/** On the mesh host, whether the space's clients account revoked this credential's key. */
function revokedHere(scope: CredentialScope | undefined): boolean {
  const t = activeTarget();
  if (!t?.authDir || !scope?.userPub) return false;
  try {
    return scope.userPub in (AuthStore.existing(t.authDir)?.revocations(clientsAccount(t.space)) ?? {});
  } catch {
    return false;
  }
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

import { launchErrorOf } from "../runtime/index.js";
import { CotalError } from "../schemas/index.js";

/** A launch option (`--opt key=value` or an agent file's `launchOptions`) that the builder refuses. */
export class LaunchOptionError extends CotalError {
  constructor(
    /** The key as given. */
    readonly key: string,
    /** `unknown`: not a Claude flag we pass through; `reserved`: it would override Cotal's wiring or deny floor; `bad-value`: the value does not fit the flag. */
    readonly reason: "unknown" | "reserved" | "bad-value" | "conflict",
    message: string,
    remedy: string,
  ) {
    super("bad-launch-option", message, { remedy });
  }
}

/**
 * The launch would run Claude in bypass-permissions mode as root outside a sandbox, which the
 * Claude CLI refuses (`--dangerously-skip-permissions cannot be used with root/sudo privileges`).
 */
export class BypassAsRootError extends CotalError {
  constructor(
    /** The value of IS_SANDBOX in the launcher's environment, if any (Claude accepts only `1`). */
    readonly isSandboxValue: string | undefined,
  ) {
    const seen =
      isSandboxValue === undefined ? "IS_SANDBOX is not set" : `IS_SANDBOX is ${JSON.stringify(isSandboxValue)}, and Claude accepts only IS_SANDBOX=1`;
    super("bypass-as-root", `Claude refuses bypassPermissions mode as root unless it runs in a sandbox, and ${seen}.`, {
      remedy:
        "Either set IS_SANDBOX=1 if this really is a sandbox (a container or VM with nothing to lose), or choose another mode with `--opt permission-mode=dontAsk` (tools outside the allow rules are then denied), or run Cotal as a non-root user.",
    });
  }
}

/** The launch input itself is unusable (a relative path, an invalid name, an unreadable schema file…). */
export const claudeLaunchError = launchErrorOf("claude");

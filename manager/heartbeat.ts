import type { ClaudeAuthStatus, RuntimeConfigStatus } from "../schemas/index.js";

/** What a manager's status says of how its seats and runs authenticate (its `status` reply). */
interface AuthParts {
  claudeAuth?: ClaudeAuthStatus | undefined;
  runtimes: RuntimeConfigStatus[];
}

/** The Claude auth a heartbeat carries: the verdict, never where the login or the endpoint is. */
export type ClaudeAuthVerdict = Pick<ClaudeAuthStatus, "mode" | "chosen" | "vars" | "ready">;
/** A runtime as a heartbeat names it: whether it is ready, not which files it reads. */
export type RuntimeVerdict = Pick<RuntimeConfigStatus, "name" | "ready">;

/**
 * A manager's heartbeat, as every reader of the managers bucket sees it (observers, admins, leaf
 * hosts, any manager): its status, but only a verdict on its Claude auth and runtimes — the mode,
 * how it was chosen, the variable names set, ready or not — never a host path (the login file, a
 * config file), the base URL, nor a problem text naming them: observers read every heartbeat.
 * The full status stays the operator's: the `status` command, which `cotal up` and `cotal status`
 * ask.
 */
export function heartbeatOf<T extends AuthParts>(
  status: T,
): Omit<T, "claudeAuth" | "runtimes"> & { claudeAuth?: ClaudeAuthVerdict; runtimes: RuntimeVerdict[] } {
  const { claudeAuth, runtimes, ...rest } = status;
  return {
    ...rest,
    ...(claudeAuth ? { claudeAuth: { mode: claudeAuth.mode, chosen: claudeAuth.chosen, vars: claudeAuth.vars, ready: claudeAuth.ready } } : {}),
    runtimes: runtimes.map((r) => ({ name: r.name, ready: r.ready })),
  };
}

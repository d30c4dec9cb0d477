import type { RuntimeConfigStatus } from "../schemas/index.js";

/** A runtime as a heartbeat names it: whether it is ready and, for one with a choice of auth, the verdict on it; not which files it reads. */
export type RuntimeVerdict = Pick<RuntimeConfigStatus, "name" | "ready"> & {
  auth?: Pick<NonNullable<RuntimeConfigStatus["auth"]>, "mode" | "chosen" | "vars">;
};

/**
 * A manager's heartbeat, as every reader of the managers bucket sees it (observers, admins, leaf
 * hosts, any manager): its status, but only a verdict on each runtime — ready or not and, for a
 * runtime with a choice of auth (Claude), the mode, how it was chosen and the variable names set —
 * never a host path (the login file, a config file), the base URL, nor a problem text naming
 * them: observers read every heartbeat. The full status stays the operator's: the `status`
 * command, which `cotal up` and `cotal status` ask.
 */
export function heartbeatOf<T extends { runtimes: RuntimeConfigStatus[] }>(status: T): Omit<T, "runtimes"> & { runtimes: RuntimeVerdict[] } {
  const { runtimes, ...rest } = status;
  return {
    ...rest,
    runtimes: runtimes.map((r) => ({
      name: r.name,
      ready: r.ready,
      ...(r.auth ? { auth: { mode: r.auth.mode, chosen: r.auth.chosen, vars: r.auth.vars } } : {}),
    })),
  };
}

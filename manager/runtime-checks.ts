// The kernel's checks of a runtime named by a spawn or a run, made alike for every runtime of the
// registry (runtimes/): an agent the registry does not hold, what it cannot promise (`ps`), a
// runtime without credentials, and where its executable is.
import { findCli, type Env, type RuntimeAdapter, type RuntimeHost } from "../runtime/index.js";
import { DEFAULT_RUNTIME, RUNTIMES, runtimeNamed } from "../runtimes/index.js";
import { SeatRefusedError } from "./errors.js";
import { withArticle } from "../schemas/index.js";

/** Refuse, before anything starts, an agent that is neither the echo agent nor a runtime of the registry (schemas/ only checks it is a name). */
export function refuseUnknownAgent(agent: string): void {
  if (agent === "echo" || runtimeNamed(agent)) return;
  throw new SeatRefusedError(
    "agent-unavailable",
    `There is no runtime named ${JSON.stringify(agent)}; nothing was started.`,
    `Use echo or one of: ${RUNTIMES.map((r) => r.name).join(", ")} (docs/runtimes.md).`,
  );
}

/**
 * The promises a runtime cannot keep (its capability table's "no" rows, docs/runtimes.md), as
 * short tags for `ps`: empty for a runtime that keeps them all.
 */
export function capabilityGaps(adapter: RuntimeAdapter): string[] {
  const c = adapter.capabilities;
  return [
    ...(c.preToolUse !== "all" ? [`pre-tool hook: ${c.preToolUse} only`] : []),
    ...(c.denyFloor !== "cli" ? [`deny floor: ${c.denyFloor === "sandbox" ? "sandbox only" : "Bash hook only"}`] : []),
    ...(!c.notificationHook ? ["no approval state"] : []),
    ...(!c.stopFailureHook ? ["no failed-turn condition"] : []),
    ...(!c.carry ? ["no carry"] : []),
    ...(!c.eventPlane ? ["no event plane"] : []),
    ...(c.runCost === "usage" ? ["runs: tokens, not dollars"] : []),
  ];
}

/**
 * The pre-flight of a spawn or run: a manager whose runtime has no credentials refuses, before any
 * name is claimed, rather than start a seat or run whose every model call fails.
 */
export function refuseWithoutAuth(instance: string, adapter: RuntimeAdapter, host: RuntimeHost, what: "seat" | "run"): void {
  const auth = adapter.auth(host);
  if (auth.ready) return;
  throw new SeatRefusedError(
    "auth-unavailable",
    `Manager ${instance} cannot start ${withArticle(adapter.label)} ${what} that reaches its model: ${auth.problem} Nothing was started.`,
    auth.remedy ?? "See `cotal status` for the manager's runtimes.",
  );
}

/** What a manager can start, per runtime name: the host of each runtime it found here. */
export function hostsOf(o: { runtimes?: Readonly<Record<string, RuntimeHost>> | undefined }): Map<string, RuntimeHost> {
  return new Map<string, RuntimeHost>(Object.entries(o.runtimes ?? {}));
}

/** Where a runtime's executable is: its `binEnv` variable, else the first on PATH; with notes for the log. */
export function findRuntimeCli(adapter: RuntimeAdapter, env: Env): { path: string | undefined; notes: string[] } {
  return findCli(adapter, env);
}

/** The runtime adapter of a seat's agent (an agent CLI seat; the default runtime's for anything else). */
export function adapterOf(r: { agent: string }): RuntimeAdapter {
  return runtimeNamed(r.agent) ?? DEFAULT_RUNTIME;
}

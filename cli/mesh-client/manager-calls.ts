// Calls to the mesh's managers over the control rail, from any host: call, list, ps. The host
// manager's own process and files are mesh-host/manager-process.ts and mesh-host/local-manager.ts.
import { controlCaller, credsCaller, MeshServiceUnavailableError, scanStream } from "../../broker/index.js";
import { MANAGER_COMMANDS, names, type RuntimeConfigStatus, type SeatView } from "../../schemas/index.js";
import { isOperator } from "../../manager/index.js";
import type { MeshSession } from "./session.js";

/** How long a manager call is asked again while nobody serves it: a leaf host's connection being remade (docs/remote-hosts.md). */
const NO_RESPONDERS_RETRY_MS = 3_000;

/**
 * A call to a manager, typed and checked by the manager's command table. Nobody serving it is
 * asked again for a few seconds (nobody received it, so nothing ran): a manager on a leaf host is
 * out of reach for about half a second while the hub remakes that host's connection.
 */
export const callManager = controlCaller(MANAGER_COMMANDS, { retryUnservedMs: NO_RESPONDERS_RETRY_MS });

/** A manager as its last heartbeat in `cotal_managers_<space>` says (entries expire after 10 s of silence). */
export interface ManagerEntry {
  instance: string;
  host?: string;
  pid?: number;
  seats?: number;
  maxSeats?: number;
  /**
   * Every runtime it can start: ready or not, and, from its `status`, the configuration it uses
   * (docs/runtimes.md). A heartbeat carries the verdict only (ready; for a runtime with a choice of
   * auth, the mode, how chosen, variable names); the login, the base URL and the problem come from
   * the manager's `status` (withStatus).
   */
  runtimes?: Array<Pick<RuntimeConfigStatus, "name" | "ready"> & Partial<RuntimeConfigStatus>>;
}

/**
 * The managers whose heartbeat is current, read with direct message gets (which every
 * credential's account imports) rather than a KV watch (which needs a consumer).
 */
export async function listManagers(s: MeshSession): Promise<ManagerEntry[]> {
  const stream = `KV_${names.managersBucket(s.target.space)}`;
  const out = new Map<string, ManagerEntry>();
  for await (const m of scanStream(s.jsm, stream, `$KV.${names.managersBucket(s.target.space)}.>`)) {
    const instance = m.subject.split(".").pop()!;
    if (m.header?.get("KV-Operation") || m.data.length === 0) {
      out.delete(instance);
      continue;
    }
    try {
      out.set(instance, { instance, ...(JSON.parse(new TextDecoder().decode(m.data)) as Omit<ManagerEntry, "instance">) });
    } catch {
      /* not a heartbeat: ignore */
    }
  }
  return [...out.values()];
}

/**
 * The managers with what each one's `status` says of its auth and runtimes (the operator's call: its
 * login file, configuration and problems, which heartbeats leave out); a manager that does not
 * answer, or a caller who may not ask, keeps its heartbeat's verdict.
 */
export async function withStatus(s: MeshSession, managers: ManagerEntry[]): Promise<ManagerEntry[]> {
  const caller = credsCaller(s.target.creds);
  // Only the operator may call a manager's `status` (the broker refuses anyone else, and each refusal
  // is a violation in the server's log): other credentials keep the heartbeat's verdict.
  if (!isOperator(caller)) return managers;
  return Promise.all(
    managers.map(async (m) => {
      const st = await callManager(s.nc, s.target.space, "status", caller, {}, { target: m.instance, timeoutMs: 2_000 }).catch(() => undefined);
      if (!st) return m;
      return { ...m, ...(st.runtimes ? { runtimes: st.runtimes } : {}) };
    }),
  );
}

/** `ps` of one manager, or why it did not answer. */
export type ManagerSeats = { instance: string; seats: SeatView[] } | { instance: string; error: string };

/**
 * Ask every listed manager (or only `on`) for its seats; a manager that does not answer is reported,
 * not skipped. Each answer speaks for its own instance only: seats it lists under another are left out.
 */
export async function seatsOfManagers(s: MeshSession, opts: { on?: string | undefined; all?: boolean }): Promise<ManagerSeats[]> {
  const instances = opts.on ? [opts.on] : (await listManagers(s)).map((m) => m.instance);
  const caller = credsCaller(s.target.creds);
  return Promise.all(
    instances.map(async (instance): Promise<ManagerSeats> => {
      try {
        const ps = await callManager(s.nc, s.target.space, "ps", caller, { all: opts.all ?? false }, { target: instance, timeoutMs: 3_000 });
        return { instance, seats: ps.seats.filter((v) => v.instance === instance) };
      } catch (err) {
        return { instance, error: err instanceof MeshServiceUnavailableError ? "did not answer" : (err as Error).message };
      }
    }),
  );
}

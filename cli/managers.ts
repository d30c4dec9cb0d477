import { controlCaller, credsCaller, MeshServiceUnavailableError, scanStream } from "../broker/index.js";
import { MANAGER_COMMANDS, names, type SeatView } from "../schemas/index.js";
import type { MeshSession } from "./session.js";

/** A call to a manager, typed and checked by the manager's command table. */
export const callManager = controlCaller(MANAGER_COMMANDS);

/** A manager as its last heartbeat in `cotal_managers_<space>` says (entries expire after 10 s of silence). */
export interface ManagerEntry {
  instance: string;
  host?: string;
  pid?: number;
  seats?: number;
  maxSeats?: number;
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

/** `ps` of one manager, or why it did not answer. */
export type ManagerSeats = { instance: string; seats: SeatView[] } | { instance: string; error: string };

/** Ask every listed manager (or only `on`) for its seats; a manager that does not answer is reported, not skipped. */
export async function seatsOfManagers(s: MeshSession, opts: { on?: string | undefined; all?: boolean }): Promise<ManagerSeats[]> {
  const instances = opts.on ? [opts.on] : (await listManagers(s)).map((m) => m.instance);
  const caller = credsCaller(s.target.creds);
  return Promise.all(
    instances.map(async (instance): Promise<ManagerSeats> => {
      try {
        return await callManager(s.nc, s.target.space, "ps", caller, { all: opts.all ?? false }, { target: instance, timeoutMs: 3_000 });
      } catch (err) {
        return { instance, error: err instanceof MeshServiceUnavailableError ? "did not answer" : (err as Error).message };
      }
    }),
  );
}

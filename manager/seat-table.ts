import type { SeatAgent, SeatEvent } from "../schemas/index.js";
import type { SeatEntry, SeatHistory } from "./seat-log.js";
import { DEFAULT_RUNTIME } from "../runtimes/index.js";

/** Where a seat's incarnation stands, as its log says. */
export type SeatState = "requested" | "launched" | "joined" | "exited" | "fenced" | "retired";

/** One seat as the log projects it: the latest incarnation and what happened to it. */
export interface SeatRecord {
  seat: string;
  uid: string;
  epoch: number;
  state: SeatState;
  agent: SeatAgent;
  role?: string;
  persona?: string;
  manager?: string;
  /** Who wrote the incarnation's `requested` (a principal id, proven by the record's subject): only its records count. */
  writer?: string;
  requestId?: string;
  /** A helper: the agent that answers for it (its spawner, or whom it was handed over to); its retirement retires this seat. */
  spawnedBy?: string;
  /** That agent's seat incarnation, when it is a seat of the same manager. */
  spawnerUid?: string;
  /** The spawner that handed it over, once it was. */
  handedOverBy?: string;
  /** Asked for at spawn: what a restart or a re-adoption needs again. */
  spec: {
    terminal?: string;
    cwd?: string;
    model?: string;
    channels: string[];
    restarts?: number;
    windowMs?: number;
    carried?: { session: string; digest: string };
    /** The sha256 of its agent file as admitted: a helper starts again only from those bytes. */
    personaDigest?: string;
    /** supervised: permission asks go to people over the mesh (absent: unattended). */
    posture?: "unattended" | "supervised";
  };
  /** The terminal host its `launched` named. */
  terminal?: string;
  permissionMode?: string;
  pid?: number;
  startTime?: string;
  exit?: { code: number | null; signal: string | null; output?: string };
  /** An exited seat the manager retires with that exit: why (its `retired` record's reason, once written). */
  retiring?: string;
  /** Why it was fenced or retired. */
  reason?: string;
  requestedAt: number;
  /** When it entered `state`, Unix ms. */
  since: number;
  /** The stream sequence of its writer's last record on the seat: what that writer's next append must expect. */
  lastSeq: number;
}

/**
 * Fold one seat's history into its record (undefined before any `requested`). Only the seat's
 * owner writes its incarnation: a `requested` counts while the name is free (or from the owner
 * itself), and every other record counts only from the writer and manager that claimed the
 * incarnation. So a manager cannot retire, fence or rewrite another's seat, and of two managers
 * claiming a free name at once the first record in the log wins, for every reader alike.
 */
export function projectSeat(h: SeatHistory): SeatRecord | undefined {
  let r: SeatRecord | undefined;
  for (const entry of h.entries) r = applyEntry(r, entry);
  return r && { ...r, lastSeq: h.lastSeqBy.get(r.writer ?? "") ?? 0 };
}

/** Whether `entry` was written by the owner of incarnation `r` (its writer and its manager). */
export function ownedBy(r: SeatRecord, entry: SeatEntry): boolean {
  return r.writer === entry.writer && r.manager === entry.event.manager;
}

/** The record after one proven entry, by the ownership rule of projectSeat. */
export function applyEntry(r: SeatRecord | undefined, entry: SeatEntry): SeatRecord | undefined {
  if (r && !ownedBy(r, entry) && (entry.event.type !== "requested" || holdsName(r))) return r;
  const next = applyEvent(r, entry.event);
  return entry.event.type === "requested" && next ? { ...next, writer: entry.writer } : next;
}

/** The record after `e`. A `requested` starts a new incarnation; events of an older uid are ignored. */
export function applyEvent(r: SeatRecord | undefined, e: SeatEvent): SeatRecord | undefined {
  if (e.type === "requested") {
    return {
      seat: e.seat,
      uid: e.uid,
      epoch: e.epoch,
      state: "requested",
      // A request written without an agent ran the default runtime (the seat log names none for it).
      agent: e.agent ?? DEFAULT_RUNTIME.name,
      ...(e.role ? { role: e.role } : {}),
      ...(e.persona ? { persona: e.persona } : {}),
      ...(e.manager ? { manager: e.manager } : {}),
      ...(e.requestId ? { requestId: e.requestId } : {}),
      ...(e.spawnedBy ? { spawnedBy: e.spawnedBy } : {}),
      ...(e.spawnerUid ? { spawnerUid: e.spawnerUid } : {}),
      spec: {
        ...(e.terminal ? { terminal: e.terminal } : {}),
        ...(e.cwd ? { cwd: e.cwd } : {}),
        ...(e.model ? { model: e.model } : {}),
        channels: e.channels ?? [],
        ...(e.restarts !== undefined ? { restarts: e.restarts } : {}),
        ...(e.windowMs !== undefined ? { windowMs: e.windowMs } : {}),
        ...(e.carried ? { carried: e.carried } : {}),
        ...(e.personaDigest ? { personaDigest: e.personaDigest } : {}),
        ...(e.posture ? { posture: e.posture } : {}),
      },
      requestedAt: e.ts,
      since: e.ts,
      lastSeq: 0,
    };
  }
  if (!r || r.uid !== e.uid) return r;
  if (e.type === "handed-over") {
    // Who answers for it changes; its state and since do not.
    const { spawnedBy: _by, spawnerUid: _uid, ...rest } = r;
    return { ...rest, handedOverBy: e.from, ...(e.to ? { spawnedBy: e.to } : {}), ...(e.toUid ? { spawnerUid: e.toUid } : {}) };
  }
  const { retiring: _retiring, ...current } = r;
  const next: SeatRecord = { ...current, epoch: e.epoch, since: e.ts };
  switch (e.type) {
    case "launched": {
      const { exit: _exit, ...rest } = next;
      return {
        ...rest,
        state: "launched",
        terminal: e.terminal,
        ...(e.pid !== undefined ? { pid: e.pid } : {}),
        ...(e.startTime ? { startTime: e.startTime } : {}),
        ...(e.permissionMode ? { permissionMode: e.permissionMode } : {}),
      };
    }
    case "joined":
      return { ...next, state: "joined" };
    case "exited":
      return {
        ...next,
        state: "exited",
        exit: { code: e.code, signal: e.signal, ...(e.output !== undefined ? { output: e.output } : {}) },
        ...(e.retiring !== undefined ? { retiring: e.retiring } : {}),
      };
    case "restarted":
      return { ...next, state: "requested" };
    case "fenced":
      return { ...next, state: "fenced", reason: e.reason };
    case "retired":
      return { ...next, state: "retired", reason: e.reason };
    case "run":
      return r; // a run's record (its own subject) is not a seat's
  }
}

/** A seat whose name is in use: anything but retired. */
export function holdsName(r: SeatRecord): boolean {
  return r.state !== "retired";
}

/**
 * What the log says of incarnation `r`'s past, by its owner's records: when it was restarted (the
 * restart policy counts those within its window) and whether it ever joined.
 */
export function incarnationPast(h: SeatHistory, r: SeatRecord): { restartsAt: number[]; joined: boolean } {
  const own = h.entries.filter((entry) => ownedBy(r, entry) && entry.event.uid === r.uid).map((entry) => entry.event);
  return { restartsAt: own.filter((e) => e.type === "restarted").map((e) => e.ts), joined: own.some((e) => e.type === "joined") };
}

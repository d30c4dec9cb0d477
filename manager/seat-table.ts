import type { SeatAgent, SeatEvent } from "../schemas/index.js";
import type { SeatHistory } from "./seat-log.js";

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
  requestId?: string;
  /** Asked for at spawn: what a restart or a re-adoption needs again. */
  spec: {
    runtime?: string;
    cwd?: string;
    model?: string;
    channels: string[];
    restarts?: number;
    windowMs?: number;
    carried?: { session: string; digest: string };
  };
  runtime?: string;
  permissionMode?: string;
  pid?: number;
  startTime?: string;
  exit?: { code: number | null; signal: string | null; output?: string };
  /** Why it was fenced or retired. */
  reason?: string;
  requestedAt: number;
  /** When it entered `state`, Unix ms. */
  since: number;
  /** The stream sequence of its last event: what the next append must expect. */
  lastSeq: number;
}

/** Fold one seat's history into its record (undefined before any `requested`). */
export function projectSeat(h: SeatHistory): SeatRecord | undefined {
  let r: SeatRecord | undefined;
  for (const e of h.events) r = applyEvent(r, e);
  return r && { ...r, lastSeq: h.lastSeq };
}

/** The record after `e`. A `requested` starts a new incarnation; events of an older uid are ignored. */
export function applyEvent(r: SeatRecord | undefined, e: SeatEvent): SeatRecord | undefined {
  if (e.type === "requested") {
    return {
      seat: e.seat,
      uid: e.uid,
      epoch: e.epoch,
      state: "requested",
      agent: e.agent,
      ...(e.role ? { role: e.role } : {}),
      ...(e.persona ? { persona: e.persona } : {}),
      ...(e.manager ? { manager: e.manager } : {}),
      ...(e.requestId ? { requestId: e.requestId } : {}),
      spec: {
        ...(e.runtime ? { runtime: e.runtime } : {}),
        ...(e.cwd ? { cwd: e.cwd } : {}),
        ...(e.model ? { model: e.model } : {}),
        channels: e.channels ?? [],
        ...(e.restarts !== undefined ? { restarts: e.restarts } : {}),
        ...(e.windowMs !== undefined ? { windowMs: e.windowMs } : {}),
        ...(e.carried ? { carried: e.carried } : {}),
      },
      requestedAt: e.ts,
      since: e.ts,
      lastSeq: 0,
    };
  }
  if (!r || r.uid !== e.uid) return r;
  const next: SeatRecord = { ...r, epoch: e.epoch, since: e.ts };
  switch (e.type) {
    case "launched": {
      const { exit: _exit, ...rest } = next;
      return {
        ...rest,
        state: "launched",
        runtime: e.runtime,
        ...(e.pid !== undefined ? { pid: e.pid } : {}),
        ...(e.startTime ? { startTime: e.startTime } : {}),
        ...(e.permissionMode ? { permissionMode: e.permissionMode } : {}),
      };
    }
    case "joined":
      return { ...next, state: "joined" };
    case "exited":
      return { ...next, state: "exited", exit: { code: e.code, signal: e.signal, ...(e.output !== undefined ? { output: e.output } : {}) } };
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

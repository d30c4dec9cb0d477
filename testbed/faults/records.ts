// What the workload writes down while the faults run, and what the checker reads afterwards: every
// send with its receipt (or why it has none), every hand-over a recipient proved, and what ran.

/** One message a sender tried to send. */
export interface SendRecord {
  id: string;
  kind: "dm" | "channel" | "anycast";
  from: string;
  /** The seat (DM), channel or role it was for. */
  to: string;
  /** Position in its sender's sequence of sends, from 0. */
  n: number;
  sentAt: number;
  /**
   * The broker's acknowledgement: the stored stream sequence (0 when a retried send was acknowledged
   * as a duplicate of one the cluster had not finished storing). Absent: never acknowledged.
   */
  receipt?: { seq: number; at: number; duplicate: boolean };
  /** Why no receipt (the last attempt's error). */
  error?: string;
}

/** One hand-over a recipient proved: an echo seat's answer naming the message, a member's delivery, or a model's request showing it. */
export interface HandOver {
  id: string;
  /** Who it was handed to (the echo seat's name, or the channel member's). */
  to: string;
  at: number;
  /** The receiver flagged it as a possible repeat (the broker delivered it before). */
  flaggedRepeat: boolean;
  /** The seat process that was handed it, and when (ms on the schedule's clock), as an echo seat says. */
  process?: number;
  handedAt?: number;
  /** It was shown to a model (the Claude seat's, as its requests to the double show). */
  toModel?: boolean;
}

/** A process that ran as a seat, first seen by the sampler, and when it started (ms on the schedule's clock; negative: before it). */
export interface SeatProcessRecord {
  seat: string;
  pid: number;
  startedAt: number;
}

/** A look at which seat processes run on the leaf hosts: seat name → how many processes. */
export interface SeatSample {
  at: number;
  running: Record<string, number>;
}

/** A fault as it happened: when it started and healed, relative to the schedule's start, ms. */
export interface FaultEvent {
  kind: string;
  target: string;
  at: number;
  healedAt?: number;
}

/** A spawn asked of the manager during the faults, and what its answer said. */
export interface SpawnRecord {
  seat: string;
  at: number;
  /** `started`: the manager answered with the seat; otherwise what its error said was done. */
  outcome: "started" | "not-executed" | "unknown";
  detail: string;
}

/** What the manager reports of a seat: its state (`retired`, `joined`, …) and why it ended. */
export interface SeatState {
  state: string;
  reason?: string;
}

/**
 * Whether the manager says a process runs for the seat: launched or joined. Not when retired,
 * fenced or exited, nor when `uncertain` (it does not know) or only `requested`.
 */
export function seatRuns(s: SeatState): boolean {
  return s.state === "launched" || s.state === "joined";
}

/** Everything one schedule recorded. */
export interface Records {
  sends: SendRecord[];
  handOvers: HandOver[];
  seatSamples: SeatSample[];
  faults: FaultEvent[];
  spawns: SpawnRecord[];
  seatProcesses: SeatProcessRecord[];
}

export function emptyRecords(): Records {
  return { sends: [], handOvers: [], seatSamples: [], faults: [], spawns: [], seatProcesses: [] };
}

import type { SeatEventInput } from "../schemas/index.js";
import type { SeatExit } from "./process-host.js";
import type { SeatRecord } from "./seat-table.js";

// What the manager's parts share of it (manager-service.ts holds each): the seat table, changed
// only through the seat log, and the queue those changes go through. Each part names in its own
// context what else it needs.

/** The seat table as the manager's parts see it: read freely, changed only by appending to the seat log. */
export interface SeatTableAccess {
  /** Every seat the log told this manager of, by seat (`local.<name>`), as last folded. */
  readonly seats: ReadonlyMap<string, SeatRecord>;
  /** Append to the seat's log and fold the event into the table; a stale view is the fence (StaleSeatLogError). */
  append(seat: string, event: SeatEventInput): Promise<SeatRecord>;
  /**
   * The `exited` record of a seat's process that ended (its last screen lines, if any; `retiring`:
   * the reason of the retirement that follows, so a successor finishes it, not restarts it).
   */
  appendExited(seat: string, r: SeatRecord, exit: SeatExit, output: string | undefined, retiring?: string): Promise<SeatRecord>;
}

/** The manager's queue: changes to the table and the log run one at a time, in order (one writer per seat). */
export type Serial = <T>(f: () => Promise<T>) => Promise<T>;

import { CotalError } from "../schemas/index.js";

/** A seat-log append was refused: another writer moved the seat's history on (the fence). */
export class StaleSeatLogError extends CotalError {
  constructor(
    readonly seat: string,
    readonly expected: number,
    cause?: unknown,
  ) {
    super("stale-seat-log", `The seat log of ${seat} moved past sequence ${expected}: another writer (a newer manager or incarnation) owns it now.`, {
      remedy: "Replay the seat log (a restarted manager does) and act on what it says; never overwrite it.",
      cause,
    });
  }
}

/** A spawn, stop or despawn the manager refused before doing anything. */
export class SeatRefusedError extends CotalError {
  constructor(code: string, message: string, remedy: string) {
    super(code, message, { remedy });
  }
}

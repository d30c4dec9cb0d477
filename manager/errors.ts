import { CotalError } from "../schemas/index.js";
import { RUNTIMES } from "../runtimes/index.js";

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

/** A seat's opening prompt could not be stored as its mail: the seat is not started. */
export class OpeningPromptNotStoredError extends CotalError {
  constructor(seat: string, manager: string, cause: unknown) {
    super("prompt-not-stored", `The opening prompt for ${seat} could not be stored as a DM from ${manager}; nothing was started.`, {
      remedy:
        "A manager credential minted before managers hand opening prompts over as mail lacks the right: mint it again (`cotal mint <instance> --profile manager`) and restart the manager. Otherwise see the cause.",
      cause,
    });
  }
}

/** A helper's agent file is not the one its spawner's grant pinned: it is not started again. */
export class PersonaChangedError extends CotalError {
  constructor(seat: string, persona: string, spawner: string, pinned: boolean) {
    const why = pinned
      ? `The agent file of ${persona} changed since ${seat} was spawned by ${spawner}; it is not started from the new one.`
      : `${seat} was spawned by ${spawner} before helpers' agent files were pinned, so nothing says its agent file of ${persona} is the one admitted; it is not started again.`;
    super("persona-changed", why, {
      remedy: `Despawn ${seat} and have ${spawner} spawn it again once the operator has minted ${spawner} again (which pins the agent file as it is then).`,
    });
  }
}

/** A supervised seat of a runtime whose permission hook cannot return a decision: refused before anything starts. */
export function unsupervisable(agent: string): SeatRefusedError {
  return new SeatRefusedError(
    "posture-unsupported",
    `A ${agent} seat cannot run supervised: its CLI's permission hook returns no decision to it, so a person's answer from the mesh could not reach it; nothing was started.`,
    `Spawn it unattended (the default), or run a seat of ${RUNTIMES.filter((r) => r.capabilities.approvals)
      .map((r) => r.name)
      .join(" or ")} supervised (docs/runtimes.md says which runtimes support it).`,
  );
}

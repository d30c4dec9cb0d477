import { principalId, type Principal } from "../schemas/index.js";
import type { DirectMail } from "../broker/index.js";

/** One spawn's opening prompt, as the manager that starts the seat hands it over. */
export interface OpeningPrompt {
  space: string;
  /** The manager's own principal: the DM's sender, as the broker pins it. */
  from: Principal;
  /** The seat it is for. */
  seat: Principal;
  /** The seat's lifecycle uid: the DM's id derives from it, so a retried store is stored once. */
  uid: string;
  /** Who asked for the seat (the spawn's caller, as the broker pinned it). */
  by: Principal;
  prompt: string;
}

/**
 * A seat's opening prompt as mail: a DM from the manager that starts it, naming who asked for the
 * seat. Typed text is fixed text (docs/security.md): an agent TUI reads `!` as a shell command,
 * `/` as a command and escape sequences as key presses, so text another principal chose — the
 * operator's included — reaches the model only as mail, framed by the seat's connector.
 */
export function openingPromptMail(o: OpeningPrompt): DirectMail {
  return {
    space: o.space,
    from: o.from,
    fromRole: "manager",
    to: o.seat,
    id: `opening-${o.uid}`,
    parts: [{ kind: "text", text: `Opening prompt from ${principalId(o.by)}, who started this seat:\n${o.prompt}` }],
  };
}

import type { NatsConnection } from "@nats-io/transport-node";
import { parsePrincipal, principalId, type Principal } from "../schemas/index.js";
import { sendDirectMail, SERVICE_PRINCIPALS, type DirectMail } from "../broker/index.js";
import { OpeningPromptNotStoredError } from "./errors.js";

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

/**
 * A spawn's opening prompt, stored as a DM from this manager to the seat. Refused by the broker (a
 * manager credential minted before managers could send it): the spawn fails, saying so, before
 * anything starts.
 */
export async function mailOpeningPrompt(
  o: { jsConnection: NatsConnection; space: string; caller?: Principal | undefined },
  seat: string,
  uid: string,
  prompt: string,
  caller: Principal,
): Promise<void> {
  const from = o.caller ?? SERVICE_PRINCIPALS.cli;
  try {
    await sendDirectMail(o.jsConnection, openingPromptMail({ space: o.space, from, seat: parsePrincipal(seat), uid, by: caller, prompt }));
  } catch (err) {
    throw new OpeningPromptNotStoredError(seat, principalId(from), err);
  }
}

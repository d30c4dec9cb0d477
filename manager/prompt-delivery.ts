import { setTimeout as sleep } from "node:timers/promises";
import type { ScreenState } from "../runtime/index.js";
import type { SeatTerminal } from "./seat-terminal.js";

/** How long the manager waits for a typed prompt to be taken before it looks again: 10, 20, 40, then 60 s. */
const PROMPT_CHECKS_MS = [10_000, 20_000, 40_000, 60_000] as const;

export interface PromptDelivery {
  /** The seat's terminal. */
  terminal: SeatTerminal;
  /** How long after the text Enter is pressed (the runtime's `submitDelayMs`). */
  submitDelayMs?: number | undefined;
  /** What the screen is (the runtime's `classifyScreen`): nothing is pressed on any screen but the input screen. */
  classify: (screen: string) => ScreenState;
  /**
   * Whether the seat took a prompt typed at `typedAt` (its hooks reported a prompt or a turn since).
   * Only a runtime whose hooks report prompts may have a lost prompt typed again (`retype`).
   */
  taken: (typedAt: number) => boolean;
  /** The runtime's hooks report every prompt, so an untaken prompt nowhere on screen was lost and is typed again. */
  retype: boolean;
  /** Waits between checks (tests shorten them). */
  checksMs?: readonly number[];
  /** Told what was done each time a prompt was not taken (for the manager's log). */
  onRetry?: (what: "enter" | "retype") => void;
}

/** How a delivery ended: taken, still not taken after every check, or left on a screen that is not the input screen. */
export type DeliveryOutcome = { taken: true } | { taken: false; why: "not-taken" | "not-ready" | "attached"; screen: string };

/**
 * Type a prompt into a seat's TUI and see it taken. Typing is not delivery: on a host starved of
 * CPU a TUI may keep the text in its input box (its Enter read as part of a paste) or drop it
 * while it is still settling after its first frame, and the seat then sits idle with its opening
 * prompt never run (the four-runtime ring on a loaded host: Claude Code 2.1.332 showed the prompt
 * in its input box, unsent, for minutes; one more Enter sent it and the ring went round).
 * So after each wait without the seat's hooks reporting a prompt: if the text is on screen, Enter
 * is pressed again (on an empty input box it does nothing); if it is nowhere and the runtime's
 * hooks report every prompt, it is typed again. Nothing is pressed on a screen other than the
 * input screen or one showing the text itself (a permission prompt would take Enter as an
 * answer), nor while a person has the terminal open (`cotal attach`: what is in the input box may
 * be theirs).
 */
export async function deliverPrompt(text: string, d: PromptDelivery): Promise<DeliveryOutcome> {
  const typedAt = Date.now();
  await d.terminal.type(text, d.submitDelayMs);
  const fragment = firstWords(text);
  let screen = "";
  for (const waitMs of d.checksMs ?? PROMPT_CHECKS_MS) {
    if (await waitFor(() => d.taken(typedAt), waitMs)) return { taken: true };
    // What the screen is now decides whether anything may be pressed (scrollback may hold an
    // old dialog's words); whether the text was ever shown is read with the scrollback.
    screen = await d.terminal.screen();
    if (await d.terminal.attached()) return { taken: false, why: "attached", screen };
    // Some TUIs are known by their empty input box only (Gemini CLI's placeholder): the text still
    // sitting in the box on the screen as it is now is the input screen too, and Enter sends it.
    const state = d.classify(screen).kind;
    if (state === "blocked" || (state !== "ready" && !collapse(screen).includes(fragment))) return { taken: false, why: "not-ready", screen };
    const shown = await d.terminal.screen(500);
    if (collapse(shown).includes(fragment) || !d.retype || /\[Pasted text/.test(shown)) {
      d.onRetry?.("enter");
      await d.terminal.submit();
    } else {
      d.onRetry?.("retype");
      await d.terminal.type(text, d.submitDelayMs);
    }
  }
  return d.taken(typedAt) ? { taken: true } : { taken: false, why: "not-taken", screen };
}

/** The start of a prompt's first line, whitespace collapsed: what a TUI shows of it in its input box or transcript. */
function firstWords(text: string): string {
  return collapse(text.split("\n").find((l) => l.trim()) ?? "").slice(0, 40);
}

function collapse(s: string): string {
  return s.replace(/\s+/g, " ").trim();
}

async function waitFor(done: () => boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (done()) return true;
    await sleep(Math.min(250, Math.max(1, deadline - Date.now())));
  }
  return done();
}

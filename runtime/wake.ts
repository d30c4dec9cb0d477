/**
 * The one line the manager types into an idle seat's terminal to wake it. The connector's hook
 * compares a submitted prompt with it to tell a manager's wake from a person's prompt, so every
 * runtime types exactly this (one definition, here).
 */
export const MANAGER_WAKE_PROMPT = "You have new Cotal mail. Read it and act on it.";

/** The least time between two wakes of a seat that did not work in between. */
export const WAKE_EVERY_MS = 15_000;

/**
 * Whether a seat woken at `wokenAt` (undefined: not since it last worked) may be woken again at
 * `now`: after WAKE_EVERY_MS, or the runtime's longer `rewakeAfterMs` (a wake typed while the
 * last one's first prompt still runs may start a second session).
 */
export function wakeDue(wokenAt: number | undefined, now: number, runtime: { readonly rewakeAfterMs?: number | undefined }): boolean {
  return wokenAt === undefined || now - wokenAt >= Math.max(WAKE_EVERY_MS, runtime.rewakeAfterMs ?? 0);
}

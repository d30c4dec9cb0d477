import type { RuntimeAdapter } from "../runtime/index.js";

/** What agent CLIs print when their model's host cannot be reached (Node's and their own words). */
const UNREACHABLE = /unable to connect|ENOTFOUND|ECONNREFUSED|ECONNRESET|ETIMEDOUT|EAI_AGAIN|getaddrinfo|fetch failed|network error/i;

/**
 * The fix for what a seat's CLI showed before it failed to start, where one is known: a model that
 * refuses the credentials, or one that cannot be reached. Undefined otherwise (the screen itself is
 * then the cause the outcome names).
 */
export function startFailureRemedy(screen: string, adapter: Pick<RuntimeAdapter, "label" | "authFailureOnScreen">): string | undefined {
  if (adapter.authFailureOnScreen(screen))
    return `${adapter.label}'s model refused its credentials: check the key or login the manager's environment carries (\`cotal doctor\`).`;
  if (UNREACHABLE.test(screen))
    return `${adapter.label} could not reach its model: check its base URL and that the manager's host reaches it (\`cotal doctor\`).`;
  return undefined;
}

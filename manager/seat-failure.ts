import type { RuntimeAdapter } from "../runtime/index.js";

/** What agent CLIs print when their model's host cannot be reached (Node's and their own words). */
const UNREACHABLE = /unable to connect|ENOTFOUND|ECONNREFUSED|ECONNRESET|ETIMEDOUT|EAI_AGAIN|getaddrinfo|fetch failed|network error/i;

/**
 * The fix for what a seat's CLI showed before it failed to start, where one is known: a model that
 * refuses the credentials, one that cannot be reached, or nothing drawn at all (a CLI waits on the
 * network before its first frame: Claude Code 2.1.332 with no route to its vendor drew nothing for
 * about 20 s). Undefined otherwise (the screen itself is then the cause the outcome names).
 */
export function startFailureRemedy(screen: string, adapter: Pick<RuntimeAdapter, "label" | "authFailureOnScreen">): string | undefined {
  if (!screen.trim())
    return `${adapter.label} drew nothing in its terminal: it likely waits on the network (its model's base URL, or its vendor's services, out of reach from the manager's host). Check the base URL it is given and that this host reaches it (\`cotal doctor\`).`;
  if (adapter.authFailureOnScreen(screen))
    return `${adapter.label}'s model refused its credentials: check the key or login the manager's environment carries (\`cotal doctor\`).`;
  if (UNREACHABLE.test(screen))
    return `${adapter.label} could not reach its model: check its base URL and that the manager's host reaches it (\`cotal doctor\`).`;
  return undefined;
}

/**
 * One retry loop for the broker's clients (publishes whose ack was lost, durables re-created after
 * they stopped), instead of a hand-written loop with its own numbers at each place. Small and
 * ours rather than a library: the callers need a deadline, a "stop now" check between attempts
 * and a per-attempt log line, and no package in the tree offers exactly that without more weight.
 */

/** Wait before attempt `n` (0-based; attempt 0 may wait too), or undefined: give up. */
export type DelayPlan = (attempt: number) => number | undefined;

/** Exponential backoff: nothing before the first attempt, then `firstMs` doubled each attempt, at most `maxMs`. */
export function exponentialBackoff(firstMs: number, maxMs: number): DelayPlan {
  return (n) => (n === 0 ? 0 : Math.min(firstMs * 2 ** (n - 1), maxMs));
}

/** A fixed list of waits, one before each attempt; after the last, give up. */
export function fixedDelays(delaysMs: readonly number[]): DelayPlan {
  return (n) => delaysMs[n];
}

/** Give up once `deadline` (epoch ms) has passed. */
export function until(deadline: number, plan: DelayPlan): DelayPlan {
  return (n) => (n > 0 && Date.now() >= deadline ? undefined : plan(n));
}

export interface RetryOptions {
  /** The waits (and when to give up). */
  delays: DelayPlan;
  /** Whether a failure may be retried at all (default: every failure). */
  retryable?: (err: unknown) => boolean;
  /** Checked before each attempt (after its wait): true ends the loop with the last failure. */
  stop?: () => boolean;
  /** Told of each failure that will be retried. */
  onRetry?: (err: unknown, attempt: number) => void;
}

/** Run `attempt` until it succeeds or the plan gives up; rejects with the last failure. */
export async function retry<T>(attempt: (n: number) => Promise<T>, opts: RetryOptions): Promise<T> {
  // Made only when no attempt ran: an Error captures a stack, and this is on every send's path.
  let last: unknown;
  let tried = false;
  const lastFailure = () => (tried ? last : new Error("retry: no attempt was made"));
  for (let n = 0; ; n++) {
    const wait = opts.delays(n);
    if (wait === undefined) throw lastFailure();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    if (opts.stop?.()) throw lastFailure();
    try {
      return await attempt(n);
    } catch (err) {
      tried = true;
      last = err;
      if (opts.retryable && !opts.retryable(err)) throw err;
      if (opts.stop?.()) throw err;
      if (opts.delays(n + 1) !== undefined) opts.onRetry?.(err, n);
    }
  }
}

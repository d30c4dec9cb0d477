import { setTimeout as sleep } from "node:timers/promises";
/**
 * Poll, don't sleep: wait until `condition` holds, or fail with a message that says what
 * never happened. `condition` may be async; exceptions it throws count as "not yet". `what` may be
 * a function: it is called at the timeout, so the message shows what was seen by then.
 *
 * A condition that takes longer than `intervalMs` (one that runs the `cotal` CLI: a process
 * start, ≈ 0.5 s of CPU) waits as long as it took before it runs again, so a test waiting on a
 * CLI's output uses at most half a core for it, not a whole one (docs/testing.md).
 */
export async function until(condition: () => boolean | Promise<boolean>, timeoutMs: number, what: string | (() => string), intervalMs = 20): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    const started = Date.now();
    try {
      if (await condition()) return;
    } catch (err) {
      lastError = err;
    }
    const now = Date.now();
    if (now >= deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for: ${typeof what === "function" ? what() : what}`, { cause: lastError });
    }
    await sleep(Math.min(Math.max(intervalMs, now - started), deadline - now));
  }
}

/** A latch that resolves once `count` arrivals were recorded. */
export class Latch {
  #seen = 0;
  #resolve!: () => void;
  readonly done: Promise<void>;
  constructor(readonly count: number) {
    this.done = new Promise((r) => (this.#resolve = r));
    if (count <= 0) this.#resolve();
  }
  arrive(): void {
    this.#seen += 1;
    if (this.#seen >= this.count) this.#resolve();
  }
  get seen(): number {
    return this.#seen;
  }
  /** Wait for the latch, failing with a message naming what was expected and what came. */
  async wait(timeoutMs: number, what: string): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms waiting for ${this.count} × ${what}; saw ${this.#seen}`)), timeoutMs);
    });
    try {
      await Promise.race([this.done, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
}

// Resources a bench opened, released in reverse order whatever happened: at the end of a run,
// when it fails, and on Ctrl-C (the entry closes the run's teardown before it exits).

/** Closers run in reverse order of `defer`; a closer that fails does not stop the others. */
export class Teardown {
  readonly #closers: Array<() => Promise<unknown> | unknown> = [];
  #closed = false;

  /** Run `fn` when this closes. */
  defer(fn: () => Promise<unknown> | unknown): void {
    if (this.#closed) throw new Error("teardown already closed: nothing more may be opened under it");
    this.#closers.push(fn);
  }

  get closed(): boolean {
    return this.#closed;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const fn of this.#closers.splice(0).reverse()) {
      try {
        await fn();
      } catch {
        // release the rest
      }
    }
  }
}

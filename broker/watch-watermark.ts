import type { KV } from "@nats-io/kv";

/**
 * How far a watch has applied its bucket's stream (the sequence of the last entry it handled),
 * and a wait for it to reach a sequence. A snapshot served from a watched view holds every write
 * stored before it was asked for only once the view has read that far: a reader that subscribes
 * to live writes and then asks for the snapshot would otherwise miss a write stored just before
 * its subscription that the view had not yet read (seen: a console showing a seat's record
 * without the unread count written a moment later, until the seat's next change).
 */
export class WatchWatermark {
  private seq = 0;
  private waiters: Array<{ seq: number; done: (reached: boolean) => void }> = [];

  /** The last stream sequence applied. */
  get applied(): number {
    return this.seq;
  }

  advance(seq: number): void {
    if (seq <= this.seq) return;
    this.seq = seq;
    const due = this.waiters.filter((w) => w.seq <= seq);
    if (!due.length) return;
    this.waiters = this.waiters.filter((w) => w.seq > seq);
    for (const w of due) w.done(true);
  }

  /** Resolves true once `seq` is applied, false after `timeoutMs` without. */
  reached(seq: number, timeoutMs: number): Promise<boolean> {
    if (seq <= this.seq) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        resolve(false);
      }, timeoutMs);
      timer.unref();
      const waiter = {
        seq,
        done: (reached: boolean) => {
          clearTimeout(timer);
          resolve(reached);
        },
      };
      this.waiters.push(waiter);
    });
  }

  /**
   * Wait until the watch has applied everything `kv` stored so far (bounded: false when it has
   * not within `timeoutMs`). An empty bucket's stream (every record aged out) has nothing to wait for.
   */
  async caughtUpWith(kv: KV, timeoutMs: number): Promise<boolean> {
    const state = (await kv.status()).streamInfo.state;
    if (state.messages === 0) return true;
    return this.reached(state.last_seq, timeoutMs);
  }
}

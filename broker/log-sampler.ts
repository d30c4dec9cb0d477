import type { Logger } from "./log.js";

/** How a LogSampler samples. */
export interface LogSamplerOptions {
  /** How long one source's further warnings of one reason are counted instead of written, ms (default 10 s). */
  intervalMs?: number;
  /**
   * Most (source, reason) pairs tracked at once (default 1,000). Past it, a new source's warnings
   * are sampled together under the source `*`: an open mesh lets anyone name any source.
   */
  maxKeys?: number;
  /** The clock (tests). */
  now?: () => number;
}

type Level = "warn" | "error";

interface Window {
  level: Level;
  /** When the current window opened, ms. */
  since: number;
  /** Warnings counted, not written, in this window. */
  dropped: number;
  /** The first warning's message and fields: the summary repeats them. */
  msg: string;
  fields: Record<string, unknown>;
}

/**
 * Warnings about what one source sent, sampled: a warning a peer can cause once per message (a
 * malformed beat, a reply-less control request) would otherwise cost a log line per message, and a
 * flood of them a write per message and a log without bound. The first warning of a (source,
 * reason) is written as it comes; the ones after it, until an interval passed, are only counted;
 * at the end of each interval that dropped any, one summary line (the first's message and fields,
 * plus `dropped` and `intervalMs`) says how many. A source quiet for a whole interval starts over.
 *
 * So one source costs at most one line and one summary per reason and interval, whatever it sends.
 */
export class LogSampler {
  private readonly windows = new Map<string, Window>();
  private readonly intervalMs: number;
  private readonly maxKeys: number;
  private readonly now: () => number;
  /** Runs only while a window is open: an idle sampler holds no timer (nothing to stop). */
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly log: Logger,
    opts: LogSamplerOptions = {},
  ) {
    this.intervalMs = opts.intervalMs ?? 10_000;
    this.maxKeys = opts.maxKeys ?? 1_000;
    this.now = opts.now ?? Date.now;
  }

  /**
   * Warn `msg` about `source` (a principal id, or whatever names the sender) for `reason` (a short
   * constant), with `fields`; written or counted as the class says. `source` is added to the fields.
   */
  warn(source: string, reason: string, fields: Record<string, unknown>, msg: string): void {
    this.note("warn", source, reason, fields, msg);
  }

  /** As warn, at error level (a handler that failed for what a caller sent). */
  error(source: string, reason: string, fields: Record<string, unknown>, msg: string): void {
    this.note("error", source, reason, fields, msg);
  }

  private note(level: Level, source: string, reason: string, fields: Record<string, unknown>, msg: string): void {
    let key = `${reason}\u0000${source}`;
    let w = this.windows.get(key);
    if (!w && this.windows.size >= this.maxKeys) {
      source = "*";
      key = `${reason}\u0000*`;
      w = this.windows.get(key);
    }
    if (w) {
      w.dropped += 1;
      return;
    }
    const first = { ...fields, source, reason };
    this.windows.set(key, { since: this.now(), dropped: 0, level, msg, fields: first });
    this.log[level](first, msg);
    if (!this.timer) {
      // Twice an interval: a window ends at most half an interval late.
      this.timer = setInterval(() => this.flush(), Math.max(1, Math.floor(this.intervalMs / 2)));
      this.timer.unref();
    }
  }

  /**
   * End every window older than the interval: a summary line for each that dropped warnings (its
   * window starts again, so a flood keeps one summary per interval), and forget those that did not.
   * Runs on a timer while any window is open; `force` ends every window now (stop).
   */
  flush(force = false): void {
    const now = this.now();
    for (const [key, w] of this.windows) {
      const age = now - w.since;
      if (!force && age < this.intervalMs) continue;
      if (w.dropped === 0) {
        this.windows.delete(key);
        continue;
      }
      this.log[w.level]({ ...w.fields, dropped: w.dropped, intervalMs: age }, `${w.msg} (and ${w.dropped} more like it from this source, not logged)`);
      if (force) this.windows.delete(key);
      else {
        w.since = now;
        w.dropped = 0;
      }
    }
    if (this.windows.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  /** Write what is still counted now (a process stopping). */
  stop(): void {
    this.flush(true);
  }
}

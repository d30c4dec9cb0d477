import cliProgress from "cli-progress";

/** A progress bar over a byte count; a no-op where nobody watches. */
export interface Progress {
  /** Bytes done so far (of the total the bar was started with). */
  update(done: number): void;
  /** Take the bar off the terminal. */
  stop(): void;
}

/**
 * A progress bar on stderr (bytes, rate, time left), only where a person watches: stderr is a
 * terminal and `enabled`. `label` starts the line ("carrying", "restoring").
 */
export function progressBar(label: string, total: number, enabled = true): Progress {
  if (!enabled || !process.stderr.isTTY) return { update: () => undefined, stop: () => undefined };
  const bar = new cliProgress.SingleBar(
    {
      stream: process.stderr,
      format: `${label} {bar} {percentage}% | {value}/{total} bytes | {rate} | ETA {eta_formatted}`,
      hideCursor: true,
      clearOnComplete: true,
    },
    cliProgress.Presets.shades_classic,
  );
  const started = Date.now();
  let first: number | undefined;
  bar.start(total, 0, { rate: "-" });
  return {
    update(done) {
      first ??= done;
      const secs = (Date.now() - started) / 1000;
      bar.update(Math.min(done, total), { rate: secs > 0 ? `${((done - first) / 1024 ** 2 / secs).toFixed(1)} MB/s` : "-" });
    },
    stop: () => bar.stop(),
  };
}

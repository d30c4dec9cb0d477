// Percentiles and summaries of latency samples (milliseconds).

/** A summary of one set of samples, in the samples' unit (ms here). */
export interface Summary {
  /** Number of samples. */
  n: number;
  min: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
}

/**
 * The `p`-th percentile (0–100) of ascending `sorted` samples, nearest-rank method: the
 * smallest sample such that at least p % of the samples are ≤ it. Throws on no samples.
 */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) throw new Error("percentile of no samples");
  if (!(p >= 0 && p <= 100)) throw new RangeError(`percentile must be within 0..100, got ${p}`);
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[Math.min(rank, sorted.length) - 1] as number;
}

/** Summarise samples (any order). Throws on no samples. */
export function summarize(samples: readonly number[]): Summary {
  const sorted = [...samples].sort((a, b) => a - b);
  const sum = sorted.reduce((s, x) => s + x, 0);
  return {
    n: sorted.length,
    min: sorted[0] as number,
    p50: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    p99: percentile(sorted, 99),
    max: sorted[sorted.length - 1] as number,
    mean: sorted.length ? sum / sorted.length : Number.NaN,
  };
}

import { ValidationError } from "./errors.js";

const UNITS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/** Parse a duration like `90s`, `15m`, `1h`, `24h`, `7d` (or plain milliseconds) into ms. */
export function parseDuration(text: string, what = "duration"): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h|d|w)?$/.exec(text.trim());
  if (!m) {
    throw new ValidationError(what, [`${JSON.stringify(text)} is not a duration; use a number and a unit such as 30s, 15m, 1h, 24h or 7d`]);
  }
  return Math.round(Number(m[1]) * UNITS[m[2] ?? "ms"]!);
}

/** Format milliseconds compactly (`1h`, `90s`, `250ms`) for human output. */
export function formatDuration(ms: number): string {
  for (const unit of ["d", "h", "m", "s"] as const) {
    const size = UNITS[unit]!;
    if (ms >= size && ms % size === 0) return `${ms / size}${unit}`;
  }
  return ms >= 1000 ? `${(ms / 1000).toFixed(1)}s` : `${ms}ms`;
}

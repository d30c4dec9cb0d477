// The closing lines of a test run, shared by the summary reporter (one vitest process) and
// scripts/test-side-by-side.mjs (two side by side): the slowest files and one plain line any CI can read.

/** How many of the slowest files the closing lines name. */
const SLOWEST = 15;

/** The slowest files (tests and hooks) and `N passed, N failed, N skipped`. */
export function closingLines(s) {
  const slowest = [...s.files].sort((a, b) => b.ms - a.ms).slice(0, SLOWEST);
  const head =
    slowest.length > 0 ? `\nslowest files (tests and hooks):\n${slowest.map((f) => `${(f.ms / 1000).toFixed(1).padStart(7)} s  ${f.name}`).join("\n")}\n` : "";
  return `${head}\n${s.passed} passed, ${s.failed} failed, ${s.skipped} skipped\n`;
}

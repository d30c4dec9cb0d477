/**
 * Command output goes to stdout (data, receipts, tables); notes and warnings meant for a
 * person go to stderr, so `--json` output can be piped as is.
 */

import { escapeChar, oneLine, UNSAFE_IN_JSON } from "../../schemas/index.js";

export { oneLine };

/**
 * JSON text with DEL, C1 controls, U+2028/U+2029 and bidi controls written as `\u` escapes.
 * Outside strings JSON has none of these characters, so escaping them in the whole text changes
 * no value: `JSON.parse` gives back exactly what `JSON.stringify` was given.
 */
export function terminalSafeJson(value: unknown, indent?: number): string {
  return (JSON.stringify(value, null, indent) ?? "null").replace(UNSAFE_IN_JSON, escapeChar);
}

/** Print a value as JSON (one document). */
export function printJson(value: unknown): void {
  process.stdout.write(terminalSafeJson(value, 2) + "\n");
}

/** Print one JSON object on one line (streams such as `listen --json`). */
export function printJsonLine(value: unknown): void {
  process.stdout.write(terminalSafeJson(value) + "\n");
}

/**
 * Print lines of text. Peer text in them should already be framed with oneLine; whatever was
 * missed is escaped here all the same (oneLine's output has nothing left to escape).
 */
export function printLines(...lines: string[]): void {
  process.stdout.write(lines.map((l) => safeLines(l) + "\n").join(""));
}

/** A note for the person at the terminal (stderr). */
export function note(line: string): void {
  process.stderr.write(`${safeLines(line)}\n`);
}

/** A warning for the person at the terminal (stderr). */
export function warn(line: string): void {
  process.stderr.write(`cotal: warning: ${safeLines(line)}\n`);
}

/** Like oneLine, but keeps newlines: for several lines of our own text quoting others' (errors). */
export function safeLines(text: string): string {
  return text.split("\n").map(oneLine).join("\n");
}

/** Render rows as an aligned text table with a header. */
export function table(headers: string[], rows: string[][]): string[] {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join("  ")
      .trimEnd();
  return [line(headers), ...rows.map(line)];
}

/** "5s ago", "3m ago", "2h ago", "4d ago". */
export function ago(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)}m ago`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h ago`;
  return `${Math.floor(s / 86_400)}d ago`;
}

/** Local wall-clock time of a Unix-ms or ISO timestamp, HH:MM:SS. */
export function clock(ts: number | string): string {
  const d = new Date(ts);
  return [d.getHours(), d.getMinutes(), d.getSeconds()].map((n) => String(n).padStart(2, "0")).join(":");
}

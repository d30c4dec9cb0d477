/**
 * Command output goes to stdout (data, receipts, tables); notes and warnings meant for a
 * person go to stderr, so `--json` output can be piped as is.
 */

/** Print a value as JSON (one document). */
export function printJson(value: unknown): void {
  process.stdout.write(JSON.stringify(value, null, 2) + "\n");
}

/** Print one JSON object on one line (streams such as `listen --json`). */
export function printJsonLine(value: unknown): void {
  process.stdout.write(JSON.stringify(value) + "\n");
}

/** Print lines of text. */
export function printLines(...lines: string[]): void {
  process.stdout.write(lines.map((l) => l + "\n").join(""));
}

/** A note for the person at the terminal (stderr). */
export function note(line: string): void {
  process.stderr.write(`${line}\n`);
}

/** A warning for the person at the terminal (stderr). */
export function warn(line: string): void {
  process.stderr.write(`cotal: warning: ${line}\n`);
}

/**
 * Make peer-controlled text safe for one terminal line: newlines and tabs are shown as \n
 * and \t, other control characters (terminal escapes) as \u00XX.
 */
export function oneLine(text: string): string {
  // eslint-disable-next-line no-control-regex -- matching control characters is the point
  return text.replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => {
    if (c === "\n") return "\\n";
    if (c === "\t") return "\\t";
    if (c === "\r") return "\\r";
    return `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`;
  });
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

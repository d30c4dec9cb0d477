// The results table: each Cotal figure beside the raw client's and their ratio, and what every
// bench hands back to its entry (and to its smoke test).
import type { Tallies } from "./checks.js";
import type { CpuPerMessage } from "./cpu.js";
import type { Teardown } from "./teardown.js";

/** Which way is better for a figure: latencies want lower, throughputs higher. */
export type Better = "lower" | "higher";

/** One line of the results table. */
export interface Row {
  /** What was measured, e.g. `DM latency p50`. */
  name: string;
  /** Unit of both figures, e.g. `ms`, `msg/s`. */
  unit: string;
  cotal: number;
  raw: number;
  better: Better;
  /** Short note printed after the row (sample counts, caveats). */
  note?: string;
  /** CPU per message of each side over the same run (bench/cpu.ts), µs: the measure noise moves least. */
  cpu?: CpuPerMessage;
}

/** Cotal ÷ raw. */
export function ratio(row: Pick<Row, "cotal" | "raw">): number {
  return row.cotal / row.raw;
}

/** Cotal ÷ raw to two places; `n/a` when the raw figure is 0 (idle traffic the raw client does not have). */
function ratioText(row: Pick<Row, "cotal" | "raw">): string {
  const r = ratio(row);
  return Number.isFinite(r) ? r.toFixed(2) : "n/a";
}

/** The CPU columns of a row: Cotal's and raw's µs per message and their ratio; blank without. */
function cpuCells(row: Row): [string, string, string] {
  if (!row.cpu) return ["", "", ""];
  return [fmt(row.cpu.cotal), fmt(row.cpu.raw), ratioText(row.cpu)];
}

/** "cpu/msg outside the bench process: …" for a row whose CPU was split; empty without. */
function outsideNote(row: Row): string {
  const o = row.cpu?.outside;
  return o ? `cpu/msg outside the bench process (nats-server, seats): Cotal ${fmt(o.cotal)} µs, raw ${fmt(o.raw)} µs` : "";
}

/** "1.9× slower", "1.2× faster", "same", from the row's direction of better. */
export function verdict(row: Pick<Row, "cotal" | "raw" | "better">): string {
  const r = ratio(row);
  if (!Number.isFinite(r) || r <= 0) return "n/a";
  const cost = row.better === "lower" ? r : 1 / r;
  if (Math.abs(cost - 1) < 0.05) return "about the same";
  return cost > 1 ? `${cost.toFixed(2)}× slower` : `${(1 / cost).toFixed(2)}× faster`;
}

/** Format a figure with sensible precision for its size. */
export function fmt(x: number): string {
  if (!Number.isFinite(x)) return "n/a";
  if (Math.abs(x) >= 1000) return Math.round(x).toLocaleString("en-US");
  if (Math.abs(x) >= 100) return x.toFixed(0);
  if (Math.abs(x) >= 10) return x.toFixed(1);
  return x.toFixed(2);
}

/** The table as aligned plain text (what `npm run bench` prints). */
export function renderTable(rows: readonly Row[]): string {
  const header = ["measure", "unit", "Cotal", "raw NATS", "Cotal ÷ raw", "verdict", "cpu/msg Cotal µs", "raw µs", "cpu ÷"];
  const body = rows.map((r) => [r.name, r.unit, fmt(r.cotal), fmt(r.raw), ratioText(r), verdict(r), ...cpuCells(r)]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => (b[i] ?? "").length)));
  const numeric = new Set([2, 3, 4, 6, 7, 8]);
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (numeric.has(i) ? c.padStart(widths[i] ?? 0) : c.padEnd(widths[i] ?? 0)))
      .join("  ")
      .trimEnd();
  const out = [line(header), widths.map((w) => "-".repeat(w)).join("  ")];
  for (const b of body) out.push(line(b));
  const notes = rows.filter((r) => r.note || r.cpu?.outside).map((r) => `  ${r.name}: ${[r.note, outsideNote(r)].filter(Boolean).join("; ")}`);
  if (notes.length) out.push("", "notes:", ...notes);
  return out.join("\n");
}

/** The table as Markdown (for docs/performance.md). */
export function renderMarkdown(rows: readonly Row[]): string {
  const out = [
    "| measure | unit | Cotal | raw NATS | Cotal ÷ raw | verdict | cpu/msg Cotal µs | raw µs | cpu ÷ |",
    "|---|---|---:|---:|---:|---|---:|---:|---:|",
  ];
  for (const r of rows) out.push(`| ${[r.name, r.unit, fmt(r.cotal), fmt(r.raw), ratioText(r), verdict(r), ...cpuCells(r)].join(" | ")} |`);
  return out.join("\n");
}

/** What one bench returns: its figures, lines printed after them, the counts that say the run was sound, details for BENCH_JSON. */
export interface BenchReport {
  rows: Row[];
  /** Printed after the table (memory figures, tables of another shape). */
  lines: string[];
  tallies: Tallies;
  detail: Record<string, unknown>;
  /** Why the bench did not run here (a tool it needs is missing): no figures, no counts, not a failure. */
  skipped?: string;
}

/** What a bench run is given: where to register what it opens, and where to say what it does next. */
export interface BenchRun {
  /** Everything the run opens is released through this, by whoever started the run, also on failure or Ctrl-C. */
  td: Teardown;
  /** One line of progress (the entry prints it with the elapsed time; the smoke tests drop it). */
  step(what: string): void;
}

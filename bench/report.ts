// The results table: each Cotal figure beside the raw client's and their ratio.

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
}

/** Cotal ÷ raw. */
export function ratio(row: Pick<Row, "cotal" | "raw">): number {
  return row.cotal / row.raw;
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
  const header = ["measure", "unit", "Cotal", "raw NATS", "Cotal ÷ raw", "verdict"];
  const body = rows.map((r) => [r.name, r.unit, fmt(r.cotal), fmt(r.raw), `${ratio(r).toFixed(2)}`, verdict(r)]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => (b[i] ?? "").length)));
  const numeric = new Set([2, 3, 4]);
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (numeric.has(i) ? c.padStart(widths[i] ?? 0) : c.padEnd(widths[i] ?? 0)))
      .join("  ")
      .trimEnd();
  const out = [line(header), widths.map((w) => "-".repeat(w)).join("  ")];
  for (const b of body) out.push(line(b));
  const notes = rows.filter((r) => r.note).map((r) => `  ${r.name}: ${r.note}`);
  if (notes.length) out.push("", "notes:", ...notes);
  return out.join("\n");
}

/** The table as Markdown (for docs/performance.md). */
export function renderMarkdown(rows: readonly Row[]): string {
  const out = ["| measure | unit | Cotal | raw NATS | Cotal ÷ raw | verdict |", "|---|---|---:|---:|---:|---|"];
  for (const r of rows) out.push(`| ${r.name} | ${r.unit} | ${fmt(r.cotal)} | ${fmt(r.raw)} | ${ratio(r).toFixed(2)} | ${verdict(r)} |`);
  return out.join("\n");
}

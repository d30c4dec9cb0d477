// What `cotal doctor` reports: one verdict per check, with what it found and the fix, and the
// report as `--json` prints it (its zod schema is the shape's one definition).
import { z } from "zod";
import { CotalError } from "../../schemas/index.js";
import { describeError } from "../terminal/errors.js";

/**
 * pass: in place. warn: works, but something worth knowing (a runtime CLI that is not installed).
 * fail: something that breaks Cotal here, with the fix. skipped: does not apply here, and why.
 */
export const Verdict = z.enum(["pass", "warn", "fail", "skipped"]);
export type Verdict = z.infer<typeof Verdict>;

/** One check's outcome. */
export const DoctorCheck = z.object({
  /** Stable id: `nats-server`, `runtime:<name>`, `plugin`, `modes`, `ports`, `disk`, `mesh`, `clock`. */
  id: z.string().min(1),
  /** What was checked, for people. */
  title: z.string().min(1),
  verdict: Verdict,
  /** What was found (for `skipped`: why the check does not apply). */
  detail: z.string().min(1),
  /** What to do about it: set on every `fail` and `warn`. */
  fix: z.string().min(1).optional(),
});
export type DoctorCheck = z.infer<typeof DoctorCheck>;

/** Everything `cotal doctor --json` prints. */
export const DoctorReport = z.object({
  /** No check failed (warnings and skipped checks do not count against it); the exit code is 0 exactly then. */
  ok: z.boolean(),
  /** The Cotal version that checked. */
  version: z.string(),
  checks: z.array(DoctorCheck),
  /** How many checks ended in each verdict. */
  counts: z.object({ pass: z.number().int(), warn: z.number().int(), fail: z.number().int(), skipped: z.number().int() }),
});
export type DoctorReport = z.infer<typeof DoctorReport>;

export function pass(id: string, title: string, detail: string): DoctorCheck {
  return { id, title, verdict: "pass", detail };
}

export function warned(id: string, title: string, detail: string, fix: string): DoctorCheck {
  return { id, title, verdict: "warn", detail, fix };
}

export function failed(id: string, title: string, detail: string, fix: string): DoctorCheck {
  return { id, title, verdict: "fail", detail, fix };
}

export function skipped(id: string, title: string, why: string): DoctorCheck {
  return { id, title, verdict: "skipped", detail: why };
}

/**
 * A failure from an error: the sentence the CLI would print for it, and its remedy as the fix
 * (`fallbackFix` when the error names none).
 */
export function failedWith(id: string, title: string, err: unknown, fallbackFix: string): DoctorCheck {
  const said = describeError(err).replace(/^cotal: /, "");
  const remedy = err instanceof CotalError ? err.remedy : undefined;
  const detail = remedy && said.includes(remedy) ? said.replace(` ${remedy}`, "").replace(remedy, "").trim() : said;
  return failed(id, title, detail || said, remedy ?? fallbackFix);
}

/** The report of these checks, in this order. */
export function report(version: string, checks: DoctorCheck[]): DoctorReport {
  const counts = { pass: 0, warn: 0, fail: 0, skipped: 0 };
  for (const c of checks) counts[c.verdict]++;
  return { ok: counts.fail === 0, version, checks, counts };
}

const LABEL: Record<Verdict, string> = { pass: "ok", warn: "warn", fail: "FAIL", skipped: "skip" };

/** The report for people: one line per check, the fix under it, and a summary. */
export function describeReport(r: DoctorReport): string[] {
  const width = Math.max(...r.checks.map((c) => c.title.length));
  const lines = r.checks.flatMap((c) => [
    `${LABEL[c.verdict].padEnd(4)}  ${c.title.padEnd(width)}  ${c.detail}`,
    ...(c.fix ? [`${" ".repeat(width + 8)}fix: ${c.fix}`] : []),
  ]);
  const failing = r.checks.filter((c) => c.verdict === "fail").map((c) => c.title);
  const tail = `${r.counts.pass} passed, ${r.counts.warn} warning${r.counts.warn === 1 ? "" : "s"}, ${r.counts.skipped} skipped`;
  lines.push("", failing.length ? `${failing.length} failed (${failing.join(", ")}); ${tail}.` : `No problems found: ${tail}.`);
  return lines;
}

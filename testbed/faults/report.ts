// The run's report: the seed, each schedule and its faults, what was sent and checked, each
// violation with its history, and a last line of JSON for scripts.
import { INVARIANTS, type Violation } from "./checker.js";
import type { RoundResult } from "./round.js";
import { describeSchedule } from "./schedule.js";

export interface RunSummary {
  seed: number;
  schedules: number;
  faults: number;
  checked: number;
  violations: number;
}

export function summarize(seed: number, rounds: readonly RoundResult[]): RunSummary {
  return {
    seed,
    schedules: rounds.length,
    faults: rounds.reduce((a, r) => a + r.schedule.faults.length, 0),
    checked: rounds.reduce((a, r) => a + r.checked, 0),
    violations: rounds.reduce((a, r) => a + r.violations.length + (r.unhealed ? 1 : 0), 0),
  };
}

/** One line per round as it ends. */
export function roundLine(r: RoundResult): string {
  const sent = r.records.sends.length;
  const verdict = r.violations.length || r.unhealed ? `${r.violations.length} violation(s)${r.unhealed ? ", did not heal" : ""}` : "ok";
  const remedies = r.remedies.length ? ` [${r.remedies.join("; ")}]` : "";
  return `${describeSchedule(r.schedule)}${remedies} — sent ${sent} (${r.unacknowledged} unacknowledged), checked ${r.checked}, repeats ${r.repeats}; healed in ${(r.healedInMs / 1000).toFixed(1)} s, delivered ${(r.settledInMs / 1000).toFixed(1)} s later: ${verdict}`;
}

function violationText(v: Violation): string {
  return [`  [${v.invariant}] ${v.subject}: ${v.detail} (${INVARIANTS[v.invariant]})`, ...v.history.map((h) => `      ${h}`)].join("\n");
}

/** The whole report; its last line is the summary as one JSON object. */
export function report(seed: number, rounds: readonly RoundResult[], minutes: number): string {
  const s = summarize(seed, rounds);
  const byKind = new Map<string, number>();
  for (const r of rounds) for (const f of r.schedule.faults) byKind.set(f.kind, (byKind.get(f.kind) ?? 0) + 1);
  const bad = rounds.filter((r) => r.violations.length || r.unhealed);
  const lines = [
    `Fault run: seed ${seed}, ${s.schedules} schedules in ${minutes.toFixed(1)} min, ${s.faults} faults injected`,
    `faults by kind: ${[...byKind].map(([k, n]) => `${k} ${n}`).join(", ") || "none"}`,
    `messages sent ${rounds.reduce((a, r) => a + r.records.sends.length, 0)}, acknowledged deliveries checked ${s.checked}, repeats ${rounds.reduce((a, r) => a + r.repeats, 0)}, unacknowledged sends ${rounds.reduce((a, r) => a + r.unacknowledged, 0)}`,
    "schedules:",
    ...rounds.map((r) => `  ${roundLine(r)}`),
    `stalled nodes restarted while healing: ${rounds.reduce((a, r) => a + r.remedies.length, 0)}`,
    `violations: ${s.violations}`,
    ...bad.flatMap((r) => [
      `${describeSchedule(r.schedule)} — replay: npm run faults -- --seed ${r.schedule.seed} --replay ${r.schedule.index}`,
      ...(r.unhealed ? [`  [heals] ${r.unhealed}`] : []),
      ...r.violations.map((v) => violationText(v)),
    ]),
    JSON.stringify(s),
  ];
  return lines.join("\n");
}

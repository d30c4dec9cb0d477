// The invariant checker: reads one schedule's records after its faults healed and the mesh settled,
// and says which promises were broken, each with the history that shows it.
import { seatRuns, type HandOver, type Records, type SeatState, type SendRecord } from "./records.js";

export const INVARIANTS = {
  "acknowledged-is-handed": "every message the broker acknowledged is handed to each of its recipients (an anycast to one holder of its role)",
  "repeats-are-flagged": "a message handed twice to a channel member or to a model carries the possible-repeat flag the second time",
  "sender-order": "one sender's messages are stored in the order it sent them",
  "one-seat-one-process": "no seat name runs twice, also after a partition heals",
  "spawn-outcome-matches": "what the manager reports of a seat is what runs: one process for a launched or joined seat, none for a spawn it said was not done",
  "nothing-to-fenced-seat":
    "a seat process replaced by a later one of its name (its manager started another, or another claimed the name) is handed nothing after that",
} as const;
export type Invariant = keyof typeof INVARIANTS;

const ANY_HOLDER = "one holder of the role";
/** /proc's start times are in 10 ms ticks: a hand-over within two of them of a fence is not judged. */
const START_RESOLUTION_MS = 20;

export interface Violation {
  invariant: Invariant;
  /** The message id or seat name it concerns. */
  subject: string;
  detail: string;
  /** What was recorded about the subject, in order. */
  history: string[];
}

export interface CheckInput {
  records: Records;
  /** The channel's members (each must be handed each acknowledged post). */
  members: readonly string[];
  /** What the manager reports of every seat after the schedule (retired ones too), and the processes that run. */
  states: ReadonlyMap<string, SeatState>;
  running: ReadonlyMap<string, readonly number[]>;
}

export interface CheckResult {
  /** Acknowledged messages checked (each recipient counts once). */
  checked: number;
  /** Hand-overs past the first of one message to one recipient (allowed: at-least-once). */
  repeats: number;
  /** Sends that were never acknowledged (no promise made). */
  unacknowledged: number;
  violations: Violation[];
}

export function check(input: CheckInput): CheckResult {
  const { records } = input;
  const violations: Violation[] = [];
  const byId = new Map<string, HandOver[]>();
  for (const h of records.handOvers) byId.set(h.id, [...(byId.get(h.id) ?? []), h]);
  const faults = records.faults.map((f) => `fault ${f.kind} ${f.target} from ${f.at} ms to ${f.healedAt ?? "never healed"} ms`);
  const historyOf = (s: SendRecord) => [
    `sent ${s.kind} #${s.n} to ${s.to} at ${s.sentAt} ms`,
    s.receipt
      ? `acknowledged at ${s.receipt.at} ms (stream seq ${s.receipt.seq}${s.receipt.duplicate ? ", as a duplicate" : ""})`
      : `not acknowledged: ${s.error ?? "no answer"}`,
    ...(byId.get(s.id) ?? []).map(
      (h) =>
        `handed to ${h.to}${h.process ? ` (pid ${h.process} at ${h.handedAt} ms)` : ""}, proven at ${h.at} ms${h.flaggedRepeat ? " (flagged repeat)" : ""}`,
    ),
    ...faults,
  ];
  let checked = 0;
  let repeats = 0;
  for (const s of records.sends) {
    if (!s.receipt) continue;
    // An anycast goes to any one holder of the role: whoever answered.
    const recipients = s.kind === "channel" ? input.members : s.kind === "anycast" ? [ANY_HOLDER] : [s.to];
    for (const r of recipients) {
      checked += 1;
      const got = (byId.get(s.id) ?? []).filter((h) => r === ANY_HOLDER || h.to === r);
      if (got.length === 0) {
        violations.push({ invariant: "acknowledged-is-handed", subject: s.id, detail: `acknowledged, never handed to ${r}`, history: historyOf(s) });
        continue;
      }
      repeats += got.length - 1;
      // An echo seat's second answer says nothing of the flag it was handed; a member and a model show it.
      const unflagged = s.kind === "channel" || got.some((h) => h.toModel) ? got.slice(1).filter((h) => !h.flaggedRepeat) : [];
      if (unflagged.length > 0)
        violations.push({
          invariant: "repeats-are-flagged",
          subject: s.id,
          detail: `handed to ${r} ${got.length} times, a repeat unflagged`,
          history: historyOf(s),
        });
    }
  }
  // Sender order: within one sender and kind (one stream), a later send never stored before an
  // earlier one. A duplicate's ack names no position when the first copy was still being stored (seq 0).
  const last = new Map<string, SendRecord>();
  for (const s of [...records.sends].sort((a, b) => a.n - b.n)) {
    if (!s.receipt || s.receipt.seq === 0) continue;
    const key = `${s.from}/${s.kind}`;
    const prev = last.get(key);
    if (prev && prev.receipt!.seq > s.receipt.seq)
      violations.push({
        invariant: "sender-order",
        subject: s.id,
        detail: `stored at seq ${s.receipt.seq}, before the earlier #${prev.n} (seq ${prev.receipt!.seq})`,
        history: [...historyOf(prev), ...historyOf(s)],
      });
    last.set(key, s);
  }
  for (const sample of records.seatSamples) {
    for (const [seat, count] of Object.entries(sample.running)) {
      if (count > 1 && !violations.some((v) => v.invariant === "one-seat-one-process" && v.subject === seat))
        violations.push({ invariant: "one-seat-one-process", subject: seat, detail: `${count} processes ran as ${seat} at ${sample.at} ms`, history: faults });
    }
  }
  violations.push(...fencedHandOvers(records, faults));
  // A spawn answers at once; its outcome settles later (joined, or retired as failed, docs/manager.md).
  for (const sp of records.spawns) {
    const n = input.running.get(sp.seat)?.length ?? 0;
    const st = input.states.get(sp.seat);
    const now = st ? `the manager reports it ${st.state}${st.reason ? ` (${st.reason})` : ""}` : "the manager does not know it";
    const history = [`spawn of ${sp.seat} asked at ${sp.at} ms: ${sp.outcome} (${sp.detail})`, now, ...faults];
    if (sp.outcome === "started" && !st)
      violations.push({ invariant: "spawn-outcome-matches", subject: sp.seat, detail: `the spawn answered started, the manager does not know it`, history });
    if (sp.outcome === "not-executed" && (n > 0 || (st && seatRuns(st))))
      violations.push({ invariant: "spawn-outcome-matches", subject: sp.seat, detail: `the spawn answered not done, ${n} processes run as it`, history });
  }
  const running = [...input.running.keys()].sort();
  const reported = [...input.states].filter(([, v]) => seatRuns(v)).map(([name]) => name);
  for (const seat of new Set([...running, ...reported])) {
    const r = reported.includes(seat);
    const n = input.running.get(seat)?.length ?? 0;
    const st = input.states.get(seat);
    const said = st ? `the manager reports it ${st.state}${st.reason ? ` (${st.reason})` : ""}` : "the manager does not know it";
    if (r && n !== 1) violations.push({ invariant: "spawn-outcome-matches", subject: seat, detail: `${said}, ${n} processes run as it`, history: faults });
    if (!r && n > 0 && st?.state !== "uncertain")
      violations.push({ invariant: "spawn-outcome-matches", subject: seat, detail: `${n} processes run as it, ${said}`, history: faults });
  }
  return { checked, repeats, unacknowledged: records.sends.filter((s) => !s.receipt).length, violations };
}

/**
 * A seat process is fenced once a later process of its name started (its manager replaced it, or
 * a second one took its name): from then on nothing may be handed to it. One violation per fenced
 * process that was, naming how many and the first.
 */
function fencedHandOvers(records: Records, faults: readonly string[]): Violation[] {
  const procs = records.seatProcesses;
  const out: Violation[] = [];
  for (const p of procs) {
    const fence = Math.min(...procs.filter((q) => q.seat === p.seat && q.startedAt > p.startedAt).map((q) => q.startedAt));
    if (!Number.isFinite(fence)) continue;
    const late = records.handOvers.filter((h) => h.process === p.pid && h.handedAt !== undefined && h.handedAt > fence + START_RESOLUTION_MS);
    if (late.length === 0) continue;
    const first = late.reduce((a, b) => (b.handedAt! < a.handedAt! ? b : a));
    out.push({
      invariant: "nothing-to-fenced-seat",
      subject: p.seat,
      detail: `pid ${p.pid} was handed ${late.length} message(s) after a later ${p.seat} started at ${fence} ms, the first (${first.id}) at ${first.handedAt} ms`,
      history: [...procs.filter((q) => q.seat === p.seat).map((q) => `pid ${q.pid} ran as ${q.seat}, started at ${q.startedAt} ms`), ...faults],
    });
  }
  return out;
}

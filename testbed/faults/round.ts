// One schedule, run on the lab: the workload sends while the schedule's faults are injected and
// healed; then the lab is given time to heal and deliver, and the checker reads the records.
import { setTimeout as sleep } from "node:timers/promises";
import { check, type CheckResult } from "./checker.js";
import { inject, type Injected } from "./faults.js";
import type { FaultMesh } from "./mesh.js";
import { emptyRecords, type FaultEvent, type Records, type SeatState } from "./records.js";
import type { Schedule } from "./schedule.js";
import { processStartedAt } from "./seat-processes.js";
import type { Workload } from "./workload.js";

export interface RoundOptions {
  /** How long the lab may take to heal after the last fault, ms (default 90 000). */
  healMs?: number;
  /** How long acknowledged messages may take to be handed over once healed, ms (default 30 000). */
  settleMs?: number;
}

export interface RoundResult extends CheckResult {
  schedule: Schedule;
  records: Records;
  /** Set when the lab did not heal in time (the round's checks still ran). */
  unhealed?: string;
  /** What the lab did to heal beyond healing the faults (mesh.ts restartStalled). */
  remedies: string[];
  /** How long healing and delivering took after the workload ended, ms. */
  healedInMs: number;
  settledInMs: number;
}

export async function runRound(mesh: FaultMesh, workload: Workload, s: Schedule, o: RoundOptions = {}): Promise<RoundResult> {
  const records = emptyRecords();
  const remediesBefore = mesh.remedies.length;
  workload.begin(records);
  const seen = new Set<number>();
  const sampler = setInterval(() => {
    const running: Record<string, number> = {};
    for (const [seat, pids] of mesh.running()) {
      running[seat] = pids.length;
      // Each process once, with its start: a later one of the same name fences the earlier.
      for (const pid of pids.filter((p) => !seen.has(p))) {
        const started = processStartedAt(pid);
        if (started === undefined) continue;
        seen.add(pid);
        records.seatProcesses.push({ seat, pid, startedAt: workload.at(started) });
      }
    }
    records.seatSamples.push({ at: workload.now(), running });
  }, 200);
  const ctx = mesh.faultContext();
  const faultsDone = s.faults.map(async (f) => {
    await sleep(f.atMs);
    const ev: FaultEvent = { kind: f.kind, target: f.target, at: workload.now() };
    records.faults.push(ev);
    let injected: Injected | undefined;
    try {
      injected = await inject(ctx, f.kind, f.target);
      if (injected.resolved) ev.target = `${f.target} (${injected.resolved})`;
      await sleep(f.forMs);
    } finally {
      await injected?.heal();
      ev.healedAt = workload.now();
    }
  });
  // A spawn asked while the faults run: what its answer promised is checked against what runs.
  const probe = `p${s.index}`;
  const spawned = (async () => {
    await sleep(s.spawnAtMs);
    const at = workload.now();
    records.spawns.push({ seat: probe, at, ...(await mesh.spawn(probe)) });
  })();
  const interval = 1_000 / s.rate;
  while (workload.now() < s.workloadMs) {
    const t = Date.now();
    await workload.step(s.prng);
    await sleep(Math.max(0, interval - (Date.now() - t)));
  }
  await Promise.all([...faultsDone, spawned]);
  const ended = Date.now();
  let unhealed: string | undefined;
  try {
    await mesh.waitHealthy(o.healMs ?? 90_000);
  } catch (err) {
    unhealed = (err as Error).message;
  }
  const healedAt = Date.now();
  const result = async () => {
    const states = await mesh.seatStates().catch(() => new Map<string, SeatState>());
    return check({ records, members: [mesh.member.me.actor], states, running: mesh.running() });
  };
  const deadline = Date.now() + (o.settleMs ?? 30_000);
  let r = await result();
  // Both are "in the end" promises: a message may arrive late, a started seat may still be launching.
  const eventual = new Set(["acknowledged-is-handed", "spawn-outcome-matches"]);
  while (r.violations.some((v) => eventual.has(v.invariant)) && Date.now() < deadline) {
    await sleep(500);
    r = await result();
  }
  clearInterval(sampler);
  // The probe seat goes before the next schedule (it may run even when its spawn said unknown).
  await mesh
    .retire(probe)
    .catch((err: Error) =>
      r.violations.push({ invariant: "spawn-outcome-matches", subject: probe, detail: `could not be stopped: ${err.message}`, history: [] }),
    );
  return {
    ...r,
    schedule: s,
    records,
    remedies: mesh.remedies.slice(remediesBefore),
    healedInMs: healedAt - ended,
    settledInMs: Date.now() - healedAt,
    ...(unhealed ? { unhealed } : {}),
  };
}

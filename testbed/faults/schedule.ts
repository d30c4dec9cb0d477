// A schedule: the faults one round of the workload runs under, drawn from a seed. At most one
// network or broker fault at a time (the cluster keeps a majority most of the time, so the round
// also measures recovery, not only refusal), often combined with a fault of the leaf host's
// manager or a seat. `describe()` prints it; the same seed draws the same schedule.
import { INBOX_LEADER, type FaultKind } from "./faults.js";
import { Prng, scheduleSeed } from "./prng.js";

const BROKER_FAULTS: readonly FaultKind[] = ["isolate-node", "split", "one-way-loss", "cut-leaf", "pause-node", "kill-node", "power-loss", "disk-full"];
const HOST_FAULTS: readonly FaultKind[] = ["pause-manager", "kill-manager", "pause-seat", "kill-seat"];

export interface ScheduledFault {
  kind: FaultKind;
  target: string;
  /** When it is injected, ms after the workload starts. */
  atMs: number;
  /** How long it lasts before it heals, ms. */
  forMs: number;
}

export interface Schedule {
  /** The run's seed and this schedule's place in it (its own seed derives from both). */
  seed: number;
  index: number;
  /** How long the workload sends, ms; every fault heals before it ends. */
  workloadMs: number;
  /** When a seat is spawned during the faults, ms after the workload starts. */
  spawnAtMs: number;
  /** Messages sent per second (one sender, one at a time). */
  rate: number;
  faults: ScheduledFault[];
  /** The PRNG the workload draws its messages from. */
  prng: Prng;
}

export interface Topology {
  nodes: readonly string[];
  leaf: string;
  seats: readonly string[];
  /** The stores are on lazyfs: a power loss can be drawn. */
  power: boolean;
  /**
   * The nodes' server switches JetStream off when its store cannot write (nats-server 2.14 and
   * newer): a full disk can be drawn. Before 2.14 a full disk loses acknowledged messages whatever
   * Cotal does, so it is drawn only when asked for (the switched-off run `write-errors`).
   */
  fullDisk: boolean;
}

/** Draw schedule `index` of a run seeded `seed`, of the fault kinds in `only` (default all). */
export function drawSchedule(seed: number, index: number, topo: Topology, only?: readonly FaultKind[]): Schedule {
  // Without the power layer (no FUSE here) a power loss is not drawn; nor a full disk on a server that does not handle it.
  only ??= [...BROKER_FAULTS, ...HOST_FAULTS].filter((k) => (topo.power || k !== "power-loss") && (topo.fullDisk || k !== "disk-full"));
  const prng = new Prng(scheduleSeed(seed, index));
  const workloadMs = 5_000;
  const faults: ScheduledFault[] = [];
  const allowed = (ks: readonly FaultKind[]) => ks.filter((k) => !only || only.includes(k));
  const broker = allowed(BROKER_FAULTS);
  const host = allowed(HOST_FAULTS);
  const draw = (kind: FaultKind): ScheduledFault => {
    const atMs = prng.int(500, 2_000);
    return { kind, target: targetOf(kind, topo, prng), atMs, forMs: prng.int(1_000, Math.min(3_500, workloadMs - 500 - atMs)) };
  };
  if (broker.length > 0 && (host.length === 0 || prng.next() < 0.8)) faults.push(draw(prng.pick(broker)));
  if (host.length > 0 && (faults.length === 0 || prng.next() < 0.5)) faults.push(draw(prng.pick(host)));
  const spawnAtMs = prng.int(500, 3_000);
  return { seed, index, workloadMs, spawnAtMs, rate: 25, faults: faults.sort((a, b) => a.atMs - b.atMs), prng };
}

function targetOf(kind: FaultKind, topo: Topology, prng: Prng): string {
  if (kind === "power-loss") return "cluster";
  if (kind === "disk-full") return INBOX_LEADER;
  if (kind === "cut-leaf" || kind === "pause-manager" || kind === "kill-manager") return topo.leaf;
  if (kind === "pause-seat" || kind === "kill-seat") return prng.pick(topo.seats);
  return prng.pick(topo.nodes);
}

/** One line: `#3 (seed 42): kill-node n2 at 800 ms for 2500 ms; pause-seat e1 at 1200 ms for 1500 ms`. */
export function describeSchedule(s: Schedule): string {
  const faults = s.faults.map((f) => `${f.kind} ${f.target} at ${f.atMs} ms for ${f.forMs} ms`).join("; ");
  return `#${s.index} (seed ${s.seed}): ${faults || "no fault"}`;
}

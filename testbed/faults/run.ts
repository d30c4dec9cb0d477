// A fault run: build the lab once, then run schedules drawn from the seed one after another until
// the budget (minutes, or a count) is spent, and report. Used by `npm run faults` (main.ts) and by
// the in-suite schedules (test/faults).
import { handlesStoreWriteErrors, natsServerVersion, SWITCHABLE_FIXES, type SwitchableFix } from "../../broker/index.js";
import type { FaultKind } from "./faults.js";
import { lazyFsMissing } from "../lazyfs.js";
import { FaultMesh, CHANNEL, ROLE } from "./mesh.js";
import { report, roundLine, summarize, type RunSummary } from "./report.js";
import { runRound, type RoundOptions, type RoundResult } from "./round.js";
import { drawSchedule } from "./schedule.js";
import { MODEL_SEAT } from "./model-witness.js";
import { Workload } from "./workload.js";

/**
 * A fix the suite can switch off to show the checker fails without it: the nodes' durability (a
 * lab config), or one of the product's own (broker/fix-off.ts, an environment switch).
 */
export const FIXES = {
  sync: "every node syncs each write to disk before it acknowledges it (`sync_interval: always`; off: the server's default, a sync every 2 minutes)",
  "write-errors":
    "a node whose store cannot write switches JetStream off, so its leaders move to nodes that can (nats-server 2.14 and newer; off: the nodes run an older server, such as the 2.10 `cotal up` installs)",
  ...SWITCHABLE_FIXES,
} as const;
export type Fix = keyof typeof FIXES;
/** The faults each fix guards against: a switched-off run draws only these (docs/reliability.md has the table). */
export const FIX_FAULTS: Record<Fix, readonly FaultKind[]> = {
  sync: ["power-loss"],
  "write-errors": ["disk-full"],
  adoption: ["kill-manager"],
  restart: ["kill-seat"],
};

export interface FaultRunOptions {
  seed: number;
  /** Stop starting schedules after this many minutes. */
  minutes?: number;
  /** Run at most this many schedules. */
  schedules?: number;
  /** Run only schedule `replay` of the seed (what a report names for a failure). */
  replay?: number;
  /** Draw only these fault kinds. */
  only?: readonly FaultKind[];
  /** Switch this fix off. */
  fixOff?: Fix;
  /** Each round's time to heal and to deliver (runRound's defaults: 90 s, 30 s). */
  round?: RoundOptions;
  /** Stores on lazyfs, so power losses are drawn (needs FUSE; default: when the machine has it). */
  power?: boolean;
  /** A real Claude Code seat beside the echo seats (`--claude`; default off). */
  modelSeat?: boolean;
  /** The nodes' and the leaf host's nats-server (`--fix-off write-errors`: one before 2.14). */
  natsServer: string;
  cotal: string;
  keepDir?: boolean;
  say?: (line: string) => void;
  /** Resolves when the run should stop after the current schedule (Ctrl-C). */
  interrupted?: () => boolean;
}

export interface FaultRunResult {
  rounds: RoundResult[];
  summary: RunSummary;
  report: string;
}

export async function runFaults(o: FaultRunOptions): Promise<FaultRunResult> {
  const say = o.say ?? (() => undefined);
  const started = Date.now();
  const power = o.power ?? lazyFsMissing() === undefined;
  const fullDisk = fullDiskHandled(o);
  // The workload is made once the mesh is up; what the model is shown meanwhile is no schedule's.
  let workload: Workload | undefined;
  const mesh = await FaultMesh.start({
    ...(o.modelSeat ? { modelSeat: { handed: (h) => workload?.handedToModel(MODEL_SEAT, h) } } : {}),
    natsServer: o.natsServer,
    cotal: o.cotal,
    keepDir: o.keepDir,
    say,
    power,
    syncAlways: o.fixOff !== "sync",
    // The product's own fixes are switched off in its processes; the lab's (sync, write-errors) are its nodes'.
    ...(o.fixOff && o.fixOff in SWITCHABLE_FIXES ? { fixOff: o.fixOff as SwitchableFix } : {}),
  });
  const rounds: RoundResult[] = [];
  try {
    workload = new Workload({
      sender: mesh.sender,
      members: [mesh.member],
      seats: mesh.seats,
      role: ROLE,
      channel: CHANNEL,
    });
    const budgetMs = (o.minutes ?? 10) * 60_000;
    const topo = { nodes: mesh.nodes, leaf: mesh.leaf, seats: mesh.seats, power, fullDisk };
    for (let i = o.replay ?? 0; ; i += 1) {
      // A switched-off fix is shown under the fault it guards against.
      const s = drawSchedule(o.seed, i, topo, o.only ?? (o.fixOff ? FIX_FAULTS[o.fixOff] : undefined));
      const r = await runRound(mesh, workload, s, o.round);
      rounds.push(r);
      say(roundLine(r));
      if (o.replay !== undefined || (o.schedules !== undefined && rounds.length >= o.schedules)) break;
      if (Date.now() - started >= budgetMs || o.interrupted?.()) break;
    }
    workload.stop();
  } finally {
    await mesh.close();
  }
  return { rounds, summary: summarize(o.seed, rounds), report: report(o.seed, rounds, (Date.now() - started) / 60_000) };
}

/**
 * Whether the nodes' server handles a full disk (nats-server 2.14 and newer). `write-errors` off
 * needs one that does not; a full disk asked for (`--only disk-full`) needs one that does, since
 * on an older server it is that switched-off run.
 */
/** Flags that ask for a run the lab cannot make (refused before any host is built). */
export class FaultRunRefusedError extends Error {
  override readonly name = "FaultRunRefusedError";
}

function fullDiskHandled(o: FaultRunOptions): boolean {
  const v = natsServerVersion(o.natsServer);
  const handled = v !== undefined && handlesStoreWriteErrors(v.text);
  const what = `${o.natsServer} is nats-server ${v?.text ?? "of no known version"}`;
  if (o.fixOff === "write-errors" && handled)
    throw new FaultRunRefusedError(`--fix-off write-errors runs the nodes on a server before 2.14, and ${what}: pass --nats default`);
  if (o.fixOff !== "write-errors" && !handled && o.only?.includes("disk-full"))
    throw new FaultRunRefusedError(
      `a full disk on a server before 2.14 loses acknowledged messages whatever Cotal does (${what}): that is the run --fix-off write-errors; run the lab on a newer one (--nats newest)`,
    );
  return handled;
}

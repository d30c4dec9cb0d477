// DM → woken turn for an idle managed Claude seat (the real `claude` under the manager's tmux,
// against the model double): a peer's DM lands in the seat's inbox, the manager sees `idle` with
// unread mail and types the wake prompt, and the turn's request reaches the model carrying the DM.
// Beside it, the same seat's turn started the plain way: a prompt typed straight into its terminal
// until that request reaches the model. The ratio is what Cotal's wake path adds to starting a turn.
// `node dist/bench-wake.mjs` (run by `npm run bench`; skipped without tmux; BENCH_QUICK=1: fewer
// samples). Starts its own nats-server, never the shared one.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { controlCaller, Endpoint, logger, MeshService } from "../broker/index.js";
import { ManagerService, TmuxServer } from "../manager/internal.js";
import { localPrincipal, MANAGER_COMMANDS } from "../schemas/index.js";
import { claudeEnv } from "../testbed/claude-env.js";
import { allText, isMainLoopRequest, ModelDouble } from "../testbed/model-double.js";
import { NatsServer } from "../testbed/nats-server.js";
import { until } from "../testbed/until.js";
import { streamPending } from "./context.js";
import { CpuAccount, processTree } from "./cpu.js";
import type { BenchReport, BenchRun } from "./report.js";
import { summarize } from "./stats.js";

export interface WakePlan {
  /** Woken turns, and as many typed ones, alternating. */
  samples: number;
}

export const WAKE_PLANS: Record<"full" | "quick" | "smoke", WakePlan> = {
  full: { samples: 10 },
  quick: { samples: 3 },
  smoke: { samples: 1 },
};

const SPACE = "benchwake";
const WAIT_MS = 60_000;
/** Claude's first start on a loaded 2-core machine can take most of a minute. */
const JOIN_WAIT_MS = 180_000;
const callManager = controlCaller(MANAGER_COMMANDS);
const operator = localPrincipal("cotal_cli");

/** Whether tmux runs here (the manager's Claude seats live in it); the bench is skipped without it. */
export function hasTmux(): boolean {
  try {
    execFileSync("tmux", ["-V"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

/** `root`: the project, whose node_modules/.bin/claude and plugin/ tree the seat runs. */
export async function wakeBench(plan: WakePlan & { root: string }, { td, step }: BenchRun): Promise<BenchReport> {
  if (!hasTmux()) {
    return { rows: [], lines: [], tallies: {}, detail: {}, skipped: "tmux is not installed (the manager's Claude seats run in it)" };
  }
  const server = await NatsServer.start();
  td.defer(() => server.cleanup());
  const root = mkdtempSync(path.join(os.tmpdir(), "cotal-bench-wake-"));
  td.defer(() => rmSync(root, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 }));
  const nc = await connect({ servers: server.url, name: "bench-wake" });
  td.defer(() => nc.close());
  const service = await MeshService.start(nc, SPACE);
  td.defer(() => service.stop());
  const double = await ModelDouble.start();
  td.defer(() => double.close());
  const home = path.join(root, "home");
  const work = path.join(root, "work");
  mkdirSync(home);
  mkdirSync(work);
  const mgr = await ManagerService.start(nc, {
    space: SPACE,
    server: server.url,
    stateDir: path.join(root, "state"),
    instance: "bench",
    mints: false,
    jsConnection: nc,
    agentCommand: () => [process.execPath, "-e", "process.exit(1)"],
    seatEnv: (extra) => extra,
    runtimes: {
      claude: {
        executable: path.join(plan.root, "node_modules", ".bin", "claude"),
        connectorEntry: path.join(plan.root, "plugin", "bin", "connector.mjs"),
        parentEnv: claudeEnv({ baseUrl: double.url, home }),
        screenTimeoutMs: 60_000,
        settings: { pluginDir: path.join(plan.root, "plugin") },
      },
    },
    log: logger("bench-wake"),
  });
  td.defer(() => mgr.stopWithSeats(operator));
  const tmux = new TmuxServer(path.join(root, "state", "tmux.sock"), `cotal-${SPACE}`);

  step("a Claude seat spawned under the manager, until it joined");
  await callManager(nc, SPACE, "spawn", operator, { agent: "claude", name: "sleeper", cwd: work }, { target: "bench", timeoutMs: 30_000 });
  await until(
    async () => (await callManager(nc, SPACE, "ps", operator, { all: false }, { target: "bench" })).seats.some((s) => s.state === "joined"),
    JOIN_WAIT_MS,
    "the Claude seat to join",
    100,
  ).catch(async (err: unknown) => {
    throw new Error(`the Claude seat never joined; its screen:\n${await tmux.screen("sleeper")}`, { cause: err });
  });
  const peer = await Endpoint.connect({ server: server.url, space: SPACE, name: "peer" });
  td.defer(() => peer.close());
  await peer.join();
  const roster = await peer.roster();
  const idle = () => roster.entries().find((e) => e.id === "local.sleeper")?.status === "idle";
  const reached = (text: string) => () => double.requests.some((r) => isMainLoopRequest(r) && allText(r).includes(text));

  step(`${plan.samples} woken turns and as many typed ones, alternating`);
  const woken: number[] = [];
  const typed: number[] = [];
  // CPU per turn: this process (mesh service, manager, model double), nats-server, and the seat's
  // tmux server with everything under it (Claude, its connector, the hooks it ran).
  const tmuxPid = Number((await tmux.tmux("display-message", "-p", "-t", tmux.target("sleeper"), "#{pid}")).trim());
  const cpu = new CpuAccount<"woken" | "typed">(() => [...(server.pid ? [server.pid] : []), ...processTree(tmuxPid)], "wake");
  for (let i = 0; i < plan.samples; i++) {
    await until(idle, WAIT_MS, "the seat to be idle", 5);
    let text = `wake sample ${i}`;
    let t = performance.now();
    await cpu.measure("woken", 1, async () => {
      await peer.dm("local.sleeper", text);
      await until(reached(text), WAIT_MS, "the woken turn to reach the model", 5);
    });
    woken.push(performance.now() - t);
    await until(idle, WAIT_MS, "the seat to be idle again", 5);
    await new Promise((r) => setTimeout(r, 300)); // its input screen is back
    text = `typed sample ${i}`;
    t = performance.now();
    await cpu.measure("typed", 1, async () => {
      await tmux.type("sleeper", text);
      await until(reached(text), WAIT_MS, "the typed turn to reach the model", 5);
    });
    typed.push(performance.now() - t);
  }
  await until(idle, WAIT_MS, "the seat to be idle at the end", 5);
  // The woken turns' DMs were handed to Claude by a hook and acked: nothing waits in any inbox.
  const pending = await streamPending(await jetstreamManager(nc), `DM_${SPACE}`);
  const w = summarize(woken);
  const p = summarize(typed);
  return {
    rows: [
      {
        name: "DM → woken turn p50",
        unit: "ms",
        cotal: w.p50,
        raw: p.p50,
        better: "lower",
        note: `${plan.samples} samples; raw: a prompt typed into the same idle seat's terminal until its request reaches the model; cpu/msg: per turn, until its request reached the model`,
        cpu: cpu.pair("woken", "typed"),
      },
      { name: "DM → woken turn p99", unit: "ms", cotal: w.p99, raw: p.p99, better: "lower", cpu: cpu.pair("woken", "typed") },
    ],
    lines: [],
    tallies: {
      woken: { sent: plan.samples, received: woken.length, duplicates: 0, pending },
      typed: { sent: plan.samples, received: typed.length, duplicates: 0, pending: 0 },
    },
    detail: { woken: w, typed: p },
  };
}

// DM → woken turn for an idle managed Claude seat (the real `claude` under the manager's tmux,
// against the model double): a peer's DM lands in the seat's inbox, the manager sees `idle` with
// unread mail and types the wake prompt, and the turn's request reaches the model carrying the DM.
// Beside it, the same seat's turn started the plain way: a prompt typed straight into its terminal
// until that request reaches the model. The ratio is what Cotal's wake path adds to starting a turn.
// Standalone: `npm run build && node dist/bench-wake.mjs` (run by `npm run bench`; skipped without tmux).
// BENCH_QUICK=1 runs fewer samples. Starts its own nats-server, never the shared one.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { connect } from "@nats-io/transport-node";
import { controlCaller, Endpoint, logger, MeshService } from "../broker/index.js";
import { ManagerService, TmuxServer } from "../manager/internal.js";
import { localPrincipal, MANAGER_COMMANDS } from "../schemas/index.js";
import { claudeEnv } from "../testbed/claude-env.js";
import { allText, isMainLoopRequest, ModelDouble } from "../testbed/model-double.js";
import { NatsServer } from "../testbed/nats-server.js";
import { renderTable, type Row } from "./report.js";
import { summarize } from "./stats.js";

process.env.COTAL_LOG_LEVEL ??= "warn";
const QUICK = process.env.BENCH_QUICK === "1";
const SAMPLES = QUICK ? 3 : 10;
const SPACE = "benchwake";
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const callManager = controlCaller(MANAGER_COMMANDS);
const operator = localPrincipal("cotal_cli");

async function until(what: string, cond: () => boolean | Promise<boolean>, ms = 60_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

async function main(): Promise<void> {
  try {
    execFileSync("tmux", ["-V"]);
  } catch {
    console.log("cotal bench-wake: skipped (tmux is not installed)");
    return;
  }
  const server = await NatsServer.start();
  const root = mkdtempSync(path.join(os.tmpdir(), "cotal-bench-wake-"));
  const nc = await connect({ servers: server.url, name: "bench-wake" });
  const service = await MeshService.start(nc, SPACE);
  const double = await ModelDouble.start();
  const home = path.join(root, "home");
  const work = path.join(root, "work");
  mkdirSync(home);
  mkdirSync(work);
  let mgr: ManagerService | undefined;
  let peer: Endpoint | undefined;
  try {
    mgr = await ManagerService.start(nc, {
      space: SPACE,
      server: server.url,
      stateDir: path.join(root, "state"),
      instance: "bench",
      mints: false,
      jsConnection: nc,
      agentCommand: () => [process.execPath, "-e", "process.exit(1)"],
      seatEnv: (extra) => extra,
      claude: {
        claudePath: path.join(ROOT, "node_modules", ".bin", "claude"),
        connectorEntry: path.join(ROOT, "plugin", "bin", "connector.mjs"),
        pluginDir: path.join(ROOT, "plugin"),
        parentEnv: claudeEnv({ baseUrl: double.url, home }),
        screenTimeoutMs: 60_000,
      },
      log: logger("bench-wake"),
    });
    const tmux = new TmuxServer(path.join(root, "state", "tmux.sock"), `cotal-${SPACE}`);
    await callManager(nc, SPACE, "spawn", operator, { agent: "claude", name: "sleeper", cwd: work }, { target: "bench", timeoutMs: 30_000 });
    await until("the seat to join", async () =>
      (await callManager(nc, SPACE, "ps", operator, { all: false }, { target: "bench" })).seats.some((s) => s.state === "joined"),
    );
    peer = await Endpoint.connect({ server: server.url, space: SPACE, name: "peer" });
    await peer.join();
    const roster = await peer.roster();
    const idle = () => roster.entries().find((e) => e.id === "local.sleeper")?.status === "idle";
    const reached = (text: string) => () => double.requests.some((r) => isMainLoopRequest(r) && allText(r).includes(text));

    const woken: number[] = [];
    const typed: number[] = [];
    for (let i = 0; i < SAMPLES; i++) {
      await until("the seat to be idle", idle);
      let text = `wake sample ${i}`;
      let t = performance.now();
      await peer.dm("local.sleeper", text);
      await until("the woken turn to reach the model", reached(text));
      woken.push(performance.now() - t);
      await until("the seat to be idle again", idle);
      await new Promise((r) => setTimeout(r, 300)); // its input screen is back
      text = `typed sample ${i}`;
      t = performance.now();
      await tmux.type("sleeper", text);
      await until("the typed turn to reach the model", reached(text));
      typed.push(performance.now() - t);
    }
    const w = summarize(woken);
    const p = summarize(typed);
    const rows: Row[] = [
      {
        name: "DM → woken turn p50",
        unit: "ms",
        cotal: w.p50,
        raw: p.p50,
        better: "lower",
        note: `${SAMPLES} samples; raw: a prompt typed into the same idle seat's terminal until its request reaches the model`,
      },
      { name: "DM → woken turn p99", unit: "ms", cotal: w.p99, raw: p.p99, better: "lower" },
    ];
    console.log(`cotal bench-wake: ${os.cpus().length} × ${os.cpus()[0]?.model ?? "cpu"}, Node ${process.version}${QUICK ? ", BENCH_QUICK=1" : ""}\n`);
    console.log(renderTable(rows));
  } finally {
    await peer?.close().catch(() => undefined);
    await mgr?.stopWithSeats(operator).catch(() => undefined);
    await double.close().catch(() => undefined);
    await service.stop().catch(() => undefined);
    await nc.close().catch(() => undefined);
    await server.cleanup();
    rmSync(root, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
  }
}

await main();

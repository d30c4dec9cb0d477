import { existsSync } from "node:fs";
import { delimiter, join } from "node:path";
import type { Command } from "commander";
import { z } from "zod";
import { connectMesh, credsCaller, jetStreamConnection, type Logger } from "../../broker/index.js";
import { findClaudeCli, PLUGIN_BIN_DIR } from "../../connector/index.js";
import { ManagerInstance } from "../../schemas/index.js";
import { budgetCaps, ManagerService, readLaunchMaterial, runEchoAgent, type ClaudeSeatOptions } from "../../manager/index.js";
import { childEnv } from "../child-env.js";
import { meshOptions, resolveTarget, type MeshTarget } from "../context.js";
import { EXIT, UsageError } from "../errors.js";
import { cliLog, useServiceLogLevel } from "../logging.js";
import { managerInstance, managerStateDir } from "../manager-process.js";
import { packageRoot } from "../package-root.js";
import { selfCommand } from "../service-process.js";
import { packagePluginDir } from "../setup.js";
import { parseInput } from "../validate.js";

const ManagerFlags = z.object({
  instance: ManagerInstance.optional(),
  stateDir: z.string().min(1).optional(),
  maxSeats: z.coerce.number().int().positive().max(1000).optional(),
  stopSeats: z.boolean().optional(),
});

/**
 * What Claude seats run on this host: the claude executable (COTAL_CLAUDE_BIN, PATH, or the one
 * installed with this package), and this package's connector bundle and plugin tree. Without a
 * claude executable the manager still runs, and refuses Claude seats saying why.
 */
function claudeSeats(log: Logger): { claude?: ClaudeSeatOptions } {
  const root = packageRoot();
  const own = join(root, "node_modules", ".bin");
  const found = findClaudeCli({ ...process.env, PATH: [process.env.PATH ?? "", own].join(delimiter) });
  for (const n of found.notes) log.warn(n);
  const pluginDir = packagePluginDir(root);
  const connectorEntry = join(pluginDir, PLUGIN_BIN_DIR, "connector.mjs");
  if (!found.path || !existsSync(connectorEntry)) {
    log.warn(
      { claude: found.path ?? null, connectorEntry },
      "Claude seats are not available on this manager: no claude executable, or the plugin's bundles are not built",
    );
    return {};
  }
  return { claude: { claudePath: found.path, connectorEntry, pluginDir, parentEnv: process.env } };
}

/** Run a manager until SIGTERM/SIGINT (seats keep running; a restarted manager adopts them). */
async function runManager(target: MeshTarget, f: z.infer<typeof ManagerFlags>): Promise<void> {
  useServiceLogLevel();
  const stateDir = managerStateDir(target, f.stateDir);
  const instance = managerInstance(stateDir, f.instance);
  const log = cliLog("manager", { space: target.space, instance });
  const nc = await connectMesh({ server: target.server, creds: target.creds, name: `cotal-manager-${instance}` });
  const svc = await ManagerService.start(nc, {
    space: target.space,
    server: target.server,
    stateDir,
    instance,
    mints: target.creds !== undefined,
    caller: credsCaller(target.creds),
    jsConnection: jetStreamConnection(nc, target.creds),
    agentCommand: (agent) => [...selfCommand(), "agent", agent],
    seatEnv: (extra) => childEnv(extra),
    ...claudeSeats(log),
    ...(f.maxSeats ? { maxSeats: f.maxSeats } : {}),
    budget: budgetCaps(process.env, target.root ? join(target.root.dir, "budget.json") : undefined),
    log,
  });
  log.info({ pid: process.pid, stateDir }, "manager running");
  const signal = await new Promise<string>((res) => {
    for (const sig of ["SIGTERM", "SIGINT", "SIGHUP"] as const) process.once(sig, () => res(sig));
    void nc.closed().then((err) => res(err ? `connection closed: ${err.message}` : "connection closed"));
  });
  log.info({ signal }, "manager stopping");
  if (f.stopSeats) await svc.stopWithSeats(credsCaller(target.creds));
  else await svc.stop();
  if (!nc.isClosed()) await nc.drain().catch(() => nc.close());
  process.exitCode = signal.startsWith("SIG") ? EXIT.ok : EXIT.failed;
}

/** `cotal manager`, and the hidden `cotal agent <agent>` seat processes it starts. */
export function registerManager(program: Command): void {
  const cmd = program
    .command("manager")
    .summary("run a manager on this host: it spawns, supervises and fences seats")
    .description(
      "Run this host's manager until Ctrl-C. It registers in the space's manager list under a stable instance id " +
        "(kept in its state dir), serves spawn, stop, ps and status, and records every seat's life in the seat log. " +
        "Seats keep running when the manager stops; a restarted manager adopts them.",
    )
    .option("--instance <id>", "instance id to register as (default: the one in the state dir, created once)")
    .option("--state-dir <dir>", "where the instance id and seat folders live (default: .cotal/manager beside the mesh, else ~/.cotal/manager/<space>)")
    .option("--max-seats <n>", "how many seats this manager runs at most (default 32)")
    .option(
      "--stop-seats",
      "stop and retire every seat when the manager stops (`cotal up`'s manager does; by default seats keep running and a restarted manager adopts them)",
    );
  meshOptions(cmd).action(async (raw: Record<string, unknown>) => {
    const f = parseInput(ManagerFlags, raw);
    await runManager(resolveTarget(raw), f);
  });

  const agent = program.command("agent", { hidden: true }).description("internal: seat processes a manager starts");
  agent
    .command("echo")
    .description("the built-in echo agent: joins with COTAL_LAUNCH_MATERIAL and answers DMs with the same text")
    .action(async () => {
      useServiceLogLevel();
      const file = process.env.COTAL_LAUNCH_MATERIAL;
      if (!file) throw new UsageError("COTAL_LAUNCH_MATERIAL is not set.", { remedy: "Seats are started by a manager (`cotal spawn --agent echo`)." });
      const material = readLaunchMaterial(file);
      const log = cliLog("echo", { space: material.space, name: material.name });
      const stop = new Promise((res) => {
        for (const sig of ["SIGTERM", "SIGINT", "SIGHUP"] as const) process.once(sig, res);
      });
      await runEchoAgent(material, log, stop);
    });
}

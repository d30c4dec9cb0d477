import { existsSync } from "node:fs";
import { delimiter, join } from "node:path";
import type { Command } from "commander";
import { z } from "zod";
import { connectMesh, credsCaller, jetStreamConnection, type Logger } from "../../broker/index.js";
import { PLUGIN_BIN_DIR } from "../../connector/index.js";
import { ManagerInstance, type SeatAgent } from "../../schemas/index.js";
import type { RuntimeHost } from "../../runtime/index.js";
import { budgetCaps, echoSeatCommand, findRuntimeCli, ManagerService, runEchoSeat, SEAT_CREDS_LIFETIME_MS } from "../../manager/index.js";
import { RUNTIMES } from "../../runtimes/index.js";
import { addAuthOptions, authChoices, type AuthChoices } from "../mesh-host/runtime-auth.js";
import { childEnv } from "../mesh-host/child-env.js";
import { meshBudgetFile } from "../mesh-host/budget-file.js";
import { credentialScope } from "../identity/credential-scope.js";
import { meshOptions, resolveTarget, type MeshTarget } from "../mesh-client/mesh-target.js";
import { EXIT, UsageError } from "../terminal/errors.js";
import { cliLog, useServiceLogLevel } from "../terminal/logging.js";
import { managerInstance, managerStateDir } from "../mesh-host/manager-process.js";
import { packageRoot } from "../install/package-root.js";
import { selfCommand, siblingBundle } from "../mesh-host/service-process.js";
import { packagePluginDir } from "../install/setup-files.js";
import { duration, parseInput } from "../terminal/validate.js";

const ManagerFlags = z.object({
  instance: ManagerInstance.optional(),
  stateDir: z.string().min(1).optional(),
  maxSeats: z.coerce.number().int().positive().max(1000).optional(),
  stopSeats: z.boolean().optional(),
  seatCredsLifetime: duration
    .pipe(z.number().min(5_000, "a seat's credential must live at least 5s").max(SEAT_CREDS_LIFETIME_MS, "a seat's credential lives at most 30d"))
    .optional(),
});

/**
 * What the runtimes (docs/runtimes.md) run on this host: each one's executable (its bin variable,
 * PATH, or the one installed with this package), this package's connector bundle and plugin tree,
 * and the auth chosen for it. A runtime without an executable is left out: the manager still runs,
 * and refuses its seats and runs, saying why.
 */
function runtimeHosts(log: Logger, auth: AuthChoices): { runtimes: Record<string, RuntimeHost> } {
  const root = packageRoot();
  const env = { ...process.env, PATH: [process.env.PATH ?? "", join(root, "node_modules", ".bin")].join(delimiter) };
  const pluginDir = packagePluginDir(root);
  const connectorEntry = join(pluginDir, PLUGIN_BIN_DIR, "connector.mjs");
  const runtimes: Record<string, RuntimeHost> = {};
  for (const adapter of RUNTIMES) {
    const found = findRuntimeCli(adapter, env);
    for (const n of found.notes) log.warn(n);
    if (!found.path || !existsSync(connectorEntry)) {
      log.warn(
        { runtime: adapter.name, executable: found.path ?? null, connectorEntry },
        `${adapter.label} seats are not available on this manager: no ${adapter.command} executable, or the plugin's bundles are not built`,
      );
      continue;
    }
    const host: RuntimeHost = { executable: found.path, connectorEntry, parentEnv: process.env, authMode: auth[adapter.name], settings: { pluginDir } };
    // Names only: which configuration or mode, from which variables, and what is missing; never a value.
    const { ready, summary, problem, detail } = adapter.auth(host);
    if (ready) log.info({ runtime: adapter.name, config: summary, ...(detail ? { auth: detail } : {}) }, `${adapter.label} seats and runs use ${summary}`);
    else
      log.warn({ runtime: adapter.name, config: summary, ...(detail ? { auth: detail } : {}) }, `${adapter.label} seats and runs will be refused: ${problem}`);
    runtimes[adapter.name] = host;
  }
  return { runtimes };
}

/**
 * A manager credential is named like its instance, and the broker lets it serve, heartbeat and
 * write the seat log only under that name: its instance is the credential's name (another
 * `--instance` is refused here, before the broker would refuse every subscription).
 */
function credentialInstance(target: MeshTarget, asked: string | undefined): string | undefined {
  if (!target.creds || credentialScope(target.creds)?.profile !== "manager") return undefined;
  const named = credsCaller(target.creds).actor;
  if (asked !== undefined && asked !== named)
    throw new UsageError(`The manager credential ${target.creds} is named ${named}: a manager on it runs as instance ${named}, not ${asked}.`, {
      remedy: `Leave out --instance, or pass --instance ${named}.`,
    });
  return named;
}

/**
 * The command line of a seat process: the echo seat's own small bundle beside this CLI's when the
 * build made it (it loads the broker, not the CLI; with the seat's V8 flags), else this CLI's hidden `agent <agent>`.
 */
function seatCommand(agent: SeatAgent): string[] {
  const bundle = agent === "echo" ? siblingBundle("echo-seat.mjs") : undefined;
  return bundle ? echoSeatCommand(bundle, process.execPath, process.execArgv) : [...selfCommand(), "agent", agent];
}

/**
 * How long its seats' permission asks wait for a person (COTAL_APPROVAL_TIMEOUT_MS, 1 s to 9 min;
 * docs/security.md, The approve right): unset or out of range, the connector's default.
 */
function approvalBound(env: NodeJS.ProcessEnv): { approvalTimeoutMs?: number } {
  const ms = Number(env.COTAL_APPROVAL_TIMEOUT_MS);
  return Number.isInteger(ms) && ms >= 1_000 && ms <= 540_000 ? { approvalTimeoutMs: ms } : {};
}

/** Run a manager until SIGTERM/SIGINT (seats keep running; a restarted manager adopts them). */
async function runManager(target: MeshTarget, f: z.infer<typeof ManagerFlags> & { auth: AuthChoices }): Promise<void> {
  useServiceLogLevel();
  const stateDir = managerStateDir(target, f.stateDir);
  const instance = managerInstance(stateDir, credentialInstance(target, f.instance) ?? f.instance);
  const log = cliLog("manager", { space: target.space, instance });
  // `cotal up` renews the host manager's credential file in place: a renewal that lands after the
  // expiry must still bring this process back (broker/renewal-wait.ts).
  const nc = await connectMesh({ server: target.server, creds: target.creds, name: `cotal-manager-${instance}`, awaitRenewal: true });
  const svc = await ManagerService.start(nc, {
    space: target.space,
    server: target.server,
    stateDir,
    instance,
    mints: target.creds !== undefined,
    caller: credsCaller(target.creds),
    jsConnection: jetStreamConnection(nc, target.creds),
    agentCommand: seatCommand,
    seatEnv: (extra) => childEnv(extra),
    ...runtimeHosts(log, f.auth),
    ...(f.maxSeats ? { maxSeats: f.maxSeats } : {}),
    ...(f.seatCredsLifetime ? { seatCredsLifetimeMs: f.seatCredsLifetime } : {}),
    ...approvalBound(process.env),
    budget: budgetCaps(process.env, meshBudgetFile(target)),
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
      "--seat-creds-lifetime <duration>",
      "static meshes: how long each seat's credential lives, e.g. 7d (default 30d, the most); the manager mints it again while the seat runs, once a third of it is left",
    )
    .option(
      "--stop-seats",
      "stop and retire every seat when the manager stops (`cotal up`'s manager does; by default seats keep running and a restarted manager adopts them)",
    );
  meshOptions(addAuthOptions(cmd, "its")).action(async (raw: Record<string, unknown>) => {
    const f = { ...parseInput(ManagerFlags, raw), auth: authChoices(raw) };
    await runManager(resolveTarget(raw), f);
  });

  const agent = program.command("agent", { hidden: true }).description("internal: seat processes a manager starts");
  agent
    .command("echo")
    .description("the built-in echo agent: joins with COTAL_LAUNCH_MATERIAL and answers DMs with the same text")
    .action(async () => {
      useServiceLogLevel();
      await runEchoSeat();
    });
}

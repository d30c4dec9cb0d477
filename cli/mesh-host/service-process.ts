import { spawn } from "node:child_process";
import { closeSync, existsSync, openSync, realpathSync } from "node:fs";
import { dirname, join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { NatsConnection } from "@nats-io/transport-node";
import { connectMesh, type StorageLimits } from "../../broker/index.js";
import { LOG_FILE_ENV } from "./bounded-log.js";
import { childEnv } from "./child-env.js";
import { CommandFailedError } from "../terminal/errors.js";
import { serviceLogLevel } from "../terminal/logging.js";
import type { MeshRoot, ServiceLog } from "./mesh-root.js";
import { logTail } from "./nats-process.js";
import { findProcesses, isRunning, recordOf, stopProcess, type ProcessRecord } from "./pid-file.js";
import { pingMeshService } from "./probe.js";
import { noteStarted } from "./up-guard.js";

/** Where the mesh service connects and which space it serves. */
export interface ServiceTarget {
  server: string;
  space: string;
  /** The credential `cotal up` itself checks the service with. */
  creds?: string | undefined;
  /** Static meshes: the mesh service's own credential and the auth folder it mints from. */
  serviceCreds?: string | undefined;
  authDir?: string | undefined;
  /** Stream limits the service provisions with (`cotal up --…-bytes`). */
  limits?: Partial<StorageLimits> | undefined;
}

/** The command line that runs this very CLI (node, its flags, the bundle). */
export function selfCommand(): string[] {
  const entry = process.argv[1];
  if (!entry) throw new CommandFailedError("Cannot tell where the cotal CLI is installed (process.argv[1] is empty).");
  return [process.execPath, ...process.execArgv, realpathSync(entry)];
}

/** The services' bundle the build puts beside the CLI's (cli/service-main.ts). */
const SERVICE_BUNDLE = "cotal-service.mjs";

/**
 * V8 flags of the services' processes, ahead of node's own flags of this CLI (a flag given twice,
 * the last wins: yours). A young generation of 2 MiB semispaces instead of 16: an idle mesh
 * service or manager holds ≈ 50 MiB instead of ≈ 70 (PSS), for as long as the mesh is up, with
 * carry's and the manager bench's figures unchanged (docs/performance.md).
 */
export const SERVICE_NODE_FLAGS = ["--max-semi-space-size=2"] as const;

/**
 * The command line that runs Cotal's services (`mesh serve`, `manager`): the services' own bundle
 * beside this CLI's, which loads what they run and not the whole CLI; this CLI when there is none
 * (run from sources, or a copy of the CLI's bundle alone).
 */
export function serviceCommand(): string[] {
  const bundle = siblingBundle(SERVICE_BUNDLE);
  const [node, ...rest] = bundle ? [process.execPath, ...process.execArgv, bundle] : selfCommand();
  return [node!, ...SERVICE_NODE_FLAGS, ...rest];
}

/**
 * A bundle the build put beside this CLI's own (e.g. `echo-seat.mjs` beside `dist/cotal.mjs`), or
 * undefined when there is none (run from sources, or an older build).
 */
export function siblingBundle(file: string): string | undefined {
  const entry = process.argv[1];
  if (!entry) return undefined;
  const path = join(dirname(realpathSync(entry)), file);
  return existsSync(path) ? path : undefined;
}

/**
 * Start the mesh service (`cotal mesh serve`) as a detached process logging to
 * `.cotal/logs/mesh-service.log`, and wait until it answers a ping on the control rail.
 */
export async function startMeshService(root: MeshRoot, t: ServiceTarget, timeoutMs = 20_000): Promise<ProcessRecord> {
  // Paths only: no secret is ever put on a command line.
  const args = [
    "mesh",
    "serve",
    "--server",
    t.server,
    "--space",
    t.space,
    ...(t.serviceCreds ? ["--creds", t.serviceCreds] : t.creds ? ["--creds", t.creds] : []),
    ...(t.authDir ? ["--auth-dir", t.authDir] : []),
    ...(t.limits ? ["--limits", JSON.stringify(t.limits)] : []),
  ];
  return startDetached(root, "mesh-service", "the mesh service", args, t, timeoutMs, async (nc) => (await pingMeshService(nc, t.space, 500)) !== undefined);
}

/**
 * Start the service `cotal <args>` (from the services' bundle: serviceCommand) detached in the
 * project folder, logging to `.cotal/logs/<log>.log`, and wait until `answers` says it serves
 * (connected as `t.creds`); a process that exits first, or never answers, fails with its log's
 * last lines.
 */
export async function startDetached(
  root: MeshRoot,
  log: ServiceLog,
  what: string,
  args: string[],
  t: Pick<ServiceTarget, "server" | "creds">,
  timeoutMs: number,
  answers: (nc: NatsConnection) => Promise<boolean>,
  env: Record<string, string> = {},
): Promise<ProcessRecord> {
  const argv = [...serviceCommand(), ...args];
  const logPath = root.log(log);
  const out = openSync(logPath, "a");
  let exited: string | undefined;
  let record: ProcessRecord;
  try {
    const child = spawn(argv[0]!, argv.slice(1), {
      detached: true,
      stdio: ["ignore", out, out],
      cwd: root.project,
      // The service writes its log itself, bounded (cli/mesh-host/bounded-log.ts); its stdout and stderr go to the same file.
      env: childEnv({ COTAL_LOG_LEVEL: serviceLogLevel(), [LOG_FILE_ENV]: logPath, ...env }),
    });
    child.once("exit", (code, sig) => (exited = sig ? `was killed by ${sig}` : `exited with code ${code}`));
    child.once("error", (err) => (exited = `could not be started: ${err.message}`));
    child.unref();
    if (child.pid === undefined) {
      await sleep(50);
      throw failure(`${what} ${exited ?? "could not be started"}`, logPath);
    }
    try {
      record = recordOf(child.pid, argv);
    } catch {
      await sleep(100);
      throw failure(`${what} ${exited ?? "exited at once"}`, logPath);
    }
    noteStarted(record, root.pidFile(log)); // an interrupted `cotal up` stops it again
  } finally {
    closeSync(out);
  }
  const nc = await connectMesh({ server: t.server, creds: t.creds, name: "cotal-up" });
  try {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (exited || !isRunning(record)) throw failure(`${what} ${exited ?? "exited"} before it answered`, logPath);
      if (await answers(nc)) return record;
      await sleep(100);
    }
  } finally {
    await nc.close().catch(() => undefined);
  }
  await stopProcess(record, 2_000);
  throw failure(`${what} did not answer within ${timeoutMs / 1000} s`, logPath);
}

/**
 * Mesh service processes of this project running now, found without their pid file: this
 * user's `cotal … mesh serve` processes whose working directory is the project (`cotal up`
 * starts them there). Used when run/mesh-service.json is missing or unreadable, so a lost
 * record means "find the real one", never "start another".
 */
export function findMeshServices(root: MeshRoot): ProcessRecord[] {
  let project: string;
  try {
    project = realpathSync(root.project);
  } catch {
    return [];
  }
  return findProcesses((argv, cwd) => {
    const i = argv.indexOf("mesh");
    return cwd === project && i > 0 && argv[i + 1] === "serve" && argv.includes("--space");
  });
}

function failure(message: string, logPath: string): CommandFailedError {
  const tail = logTail(logPath);
  return new CommandFailedError(`${message}. See ${logPath}${tail ? `; its last lines:\n${tail}` : "."}`);
}

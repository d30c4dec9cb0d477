import { resolve } from "node:path";
import { Option, type Command } from "commander";
import { z } from "zod";
import { formatProvision } from "../format.js";
import { checkCreds, credsOption, defaultCreds } from "../context.js";
import { EXIT } from "../errors.js";
import { bringUp, type UpReport } from "../mesh-lifecycle.js";
import { findMeshRoot, MeshRoot } from "../mesh-root.js";
import { chooseMode } from "../mode.js";
import { note, printJson, printLines, warn } from "../output.js";
import { isRunning, readRecord, removeRecord, stopProcess, type ProcessRecord } from "../pid-file.js";
import { byteSize, host, parseInput, port, positiveInt, token } from "../validate.js";

const UpFlags = z.object({
  open: z.boolean().optional(),
  space: token("space", "space").optional(),
  port: port.optional(),
  host: host.optional(),
  storeDir: z.string().min(1, "store dir must not be empty").optional(),
  detach: z.boolean().optional(),
  creds: z.string().optional(),
  json: z.boolean().optional(),
  chatBytes: byteSize("--chat-bytes").optional(),
  dmBytes: byteSize("--dm-bytes").optional(),
  taskBytes: byteSize("--task-bytes").optional(),
  seatLogBytes: byteSize("--seat-log-bytes").optional(),
  artifactBytes: byteSize("--artifact-bytes").optional(),
  dmBacklog: positiveInt("--dm-backlog").optional(),
  maxDisk: byteSize("--max-disk").optional(),
  maxMemory: byteSize("--max-memory").optional(),
});

/** `cotal up`: start (or find, or repair) the mesh of this project. */
export function registerUp(program: Command): void {
  program
    .command("up")
    .summary("start the mesh here: nats-server, the space's streams, the mesh service")
    .description(
      "Start the mesh of this project, or find it running. Starts nats-server (JetStream on), provisions the space's " +
        "streams and buckets, and starts the mesh service. State lives in .cotal/ (found by walking up from here; " +
        "created here if there is none). Running it again reports what runs and repairs a dead mesh service.\n\n" +
        "Without --detach it stays attached and stops the mesh on Ctrl-C.",
    )
    .option("--open", "open mode: no authentication, for quick local demos")
    .addOption(new Option("--space <name>", 'space to provision (default "default")').env("COTAL_SPACE"))
    .option("--port <n>", "client port (default 4222; if it is taken and --port is not given, a free one)")
    .option("--host <host>", "address to listen on (default 127.0.0.1)")
    .option("--store-dir <dir>", "JetStream store folder (default .cotal/jetstream)")
    .option("-d, --detach", "start in the background and return")
    .addOption(credsOption())
    .option("--chat-bytes <size>", "most bytes of channel posts stored (default 1GiB); full: new posts are refused")
    .option("--dm-bytes <size>", "most bytes of waiting DMs stored (default 512MiB)")
    .option("--task-bytes <size>", "most bytes of waiting anycasts stored (default 256MiB)")
    .option("--seat-log-bytes <size>", "most bytes of the seat log (default 128MiB)")
    .option("--artifact-bytes <size>", "most bytes of attached files (artifacts) stored (default 1GiB)")
    .option("--dm-backlog <n>", "most DMs (anycasts) one sender may have waiting for one recipient (role) (default 10000)")
    .option("--max-disk <size>", "static mode: JetStream disk the space may use in all (default 4GiB)")
    .option("--max-memory <size>", "static mode: JetStream memory the space may use in all (default 256MiB)")
    .option("--json", "print what was found and done as JSON")
    .action(async (raw: Record<string, unknown>) => {
      const flags = parseInput(UpFlags, raw);
      const root = findMeshRoot() ?? new MeshRoot(process.cwd());
      const prev = root.readInfo();
      const choice = chooseMode({ open: flags.open, host: flags.host ?? prev?.host ?? "127.0.0.1" });
      for (const w of choice.warnings) warn(w);
      const report = await bringUp(root, {
        mode: choice.mode,
        space: flags.space,
        port: flags.port,
        host: flags.host,
        storeDir: flags.storeDir ? resolve(flags.storeDir) : undefined,
        creds: flags.creds ? checkCreds(flags.creds, process.cwd()) : defaultCreds(root, prev),
        limits: definedOnly({
          chatBytes: flags.chatBytes,
          dmBytes: flags.dmBytes,
          taskBytes: flags.taskBytes,
          seatsBytes: flags.seatLogBytes,
          artifactsBytes: flags.artifactBytes,
          backlogPerSender: flags.dmBacklog,
        }),
        account: definedOnly({ diskBytes: flags.maxDisk, memoryBytes: flags.maxMemory }),
      });
      if (flags.json) printJson({ ...report, warnings: choice.warnings, detached: !!flags.detach });
      else printLines(...describeUp(report));
      if (flags.detach) return;
      // A mesh whose nats-server was already running was started in the background: repairing its
      // mesh service does not make this terminal its owner (Ctrl-C here must not stop it).
      if (report.natsServer.state === "running") {
        note(
          report.meshService.state === "running"
            ? "The mesh was already running; it keeps running in the background (`cotal down` stops it)."
            : "The mesh runs in the background; repaired it without attaching (`cotal down` stops it).",
        );
        return;
      }
      await attach(root);
    });
}

/** The object without its undefined fields, or undefined when none is left. */
function definedOnly<T extends Record<string, number | undefined>>(o: T): { [K in keyof T]?: number } | undefined {
  const kept = Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
  return Object.keys(kept).length ? (kept as { [K in keyof T]?: number }) : undefined;
}

/** The human report of `cotal up`. */
export function describeUp(r: UpReport): string[] {
  const nats = r.natsServer.state === "running" ? "already running" : "started";
  const svc = {
    running: "already running",
    started: "started",
    repaired: "repaired (it was not running; started it)",
    restarted: "restarted (it did not answer)",
  }[r.meshService.state];
  return [
    `mesh:         ${r.root}`,
    `server:       ${r.server}  (nats-server ${nats}, pid ${r.natsServer.pid})`,
    `space:        ${r.space}  (${formatProvision(r.provision)})`,
    `mesh service: ${svc}, pid ${r.meshService.pid}`,
    `manager:      ${r.manager.instance} ${r.manager.state === "running" ? "already running" : r.manager.state === "restarted" ? "restarted (it did not answer)" : "started"}, pid ${r.manager.pid}  (seats: \`cotal spawn\`)`,
    `mode:         ${r.mode}${r.mode === "open" ? " (no authentication)" : " (authentication required; commands here use .cotal/auth, others need `cotal mint`)"}`,
    `logs:         ${r.natsServer.log}, ${r.meshService.log}, ${r.manager.log}`,
    ...r.notes.map((n) => `note:         ${n}`),
  ];
}

/**
 * Foreground `up`: stay until Ctrl-C / SIGTERM, then stop the manager, the mesh service and nats-server.
 * If either exits on its own, stop the other and exit 1; if `cotal down` stopped them, exit 0.
 */
async function attach(root: MeshRoot): Promise<void> {
  const natsFile = root.pidFile("nats-server");
  const svcFile = root.pidFile("mesh-service");
  const nats = readRecord(natsFile);
  const svc = readRecord(svcFile);
  const mgrFile = root.pidFile("manager");
  const mgr = readRecord(mgrFile);
  if (!nats || !svc) return;
  note("Attached: press Ctrl-C to stop the mesh.");
  // A closed terminal (SIGHUP) must not turn the notes below into a crash that skips the stop.
  for (const stream of [process.stdout, process.stderr]) stream.on("error", () => undefined);
  const same = (file: string, rec: ProcessRecord) => {
    const now = readRecord(file);
    return now?.pid === rec.pid && now.startTime === rec.startTime;
  };
  let stopping = false;
  const stopAll = async (why: string, code: number) => {
    if (stopping) return;
    stopping = true;
    clearInterval(watch);
    note(why);
    // The manager first: it stops its seats, which say goodbye through the mesh.
    if (mgr && same(mgrFile, mgr)) {
      await stopProcess(mgr, 30_000);
      removeRecord(mgrFile);
    }
    for (const [file, rec] of [
      [svcFile, svc],
      [natsFile, nats],
    ] as const) {
      if (same(file, rec)) {
        await stopProcess(rec);
        removeRecord(file);
      }
    }
    note("Mesh stopped.");
    process.exit(code);
  };
  const watch = setInterval(() => {
    const lock = readRecord(root.lockFile);
    if (lock && isRunning(lock)) return; // a cotal up/down is at work; judge after it finished
    if (!same(natsFile, nats) || !same(svcFile, svc)) {
      // Another cotal command took over: `cotal down` stopped the mesh, or `cotal up` replaced a process.
      stopping = true;
      clearInterval(watch);
      const stopped = !readRecord(natsFile) && !isRunning(nats);
      note(stopped ? "The mesh was stopped by `cotal down`." : "The mesh is now looked after by another `cotal up`; detaching (it keeps running).");
      process.exit(EXIT.ok);
    }
    if (!isRunning(nats)) void stopAll(`nats-server (pid ${nats.pid}) exited; see ${root.log("nats-server")}.`, EXIT.failed);
    else if (!isRunning(svc)) void stopAll(`The mesh service (pid ${svc.pid}) exited; see ${root.log("mesh-service")}.`, EXIT.failed);
  }, 500);
  for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
    process.on(sig, () => void stopAll(`Received ${sig}; stopping the mesh.`, EXIT.ok));
  }
  await new Promise<never>(() => undefined);
}

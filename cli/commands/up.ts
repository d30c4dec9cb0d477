import { resolve } from "node:path";
import { Option, type Command } from "commander";
import { z } from "zod";
import { formatProvision } from "../terminal/format.js";
import { checkCreds, credsOption, defaultCreds } from "../mesh-client/mesh-target.js";
import { EXIT, UsageError } from "../terminal/errors.js";
import { bringUp, type UpReport } from "../mesh-host/mesh-lifecycle.js";
import type { PersonUp } from "../identity/person.js";
import { guardUp } from "../mesh-host/up-guard.js";
import { findMeshRoot, MeshRoot } from "../mesh-host/mesh-root.js";
import { chooseMode } from "../mesh-host/mode.js";
import { note, printJson, printLines, warn } from "../terminal/output.js";
import { isRunning, readRecord, removeRecord, stopProcess, type ProcessRecord } from "../mesh-host/pid-file.js";
import { actingName, byteSize, duration, host, parseInput, port, positiveInt, token } from "../terminal/validate.js";
import { chooseMe } from "../identity/person.js";
import { checkLeafFlags, isLoopback } from "../mesh-host/leaf-listener.js";
import { meshNodes } from "../mesh-host/cluster-nodes.js";
import { describeSync, SyncInterval } from "../mesh-host/sync-interval.js";
import { loadTeamFile } from "../team-file/team-file.js";
import { converge, planOnly, type TeamResult } from "../team-file/team-apply.js";
import { refuseServerDrift, teamServerFlags } from "../team-file/team-server.js";
import { serverAnswers } from "../mesh-host/probe.js";
import { DEFAULT_SPACE } from "../mesh-client/mesh-target.js";
import { addAuthOptions, authChoices, authLines } from "../mesh-host/runtime-auth.js";

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
  eventsBytes: byteSize("--events-bytes").optional(),
  chatPerSender: positiveInt("--chat-per-sender").optional(),
  chatMaxAge: duration.optional(),
  dmBacklog: positiveInt("--dm-backlog").optional(),
  maxDisk: byteSize("--max-disk").optional(),
  maxMemory: byteSize("--max-memory").optional(),
  maxConnections: positiveInt("--max-connections").optional(),
  cluster: z.coerce
    .number()
    .int()
    .refine((n) => n === 1 || n === 3 || n === 5, "cluster size must be 1, 3 or 5 (JetStream needs a majority of an odd number of nodes)")
    .optional(),
  leafPort: port.optional(),
  leafHost: host.optional(),
  leafTlsCert: z.string().optional(),
  leafTlsKey: z.string().optional(),
  leafTlsCa: z.string().optional(),
  leafInsecure: z.boolean().optional(),
  sync: SyncInterval.optional(),
  file: z.string().min(1, "file must name a cotal.yaml").optional(),
  dryRun: z.boolean().optional(),
  yes: z.boolean().optional(),
  me: actingName("--me name").optional(),
});

/** `cotal up`: start (or find, or repair) the mesh of this project. */
export function registerUp(program: Command): void {
  const up = program
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
    .option("--events-bytes <size>", "most bytes of event planes stored, every seat's together (default 256MiB; one seat holds at most 64MiB)")
    .option("--chat-per-sender <n>", "most posts one sender keeps on one channel; the next is refused (default 10000)")
    .option("--chat-max-age <duration>", "how long channel posts are kept, e.g. 30d (default 90d; 0d: for ever)")
    .option("--dm-backlog <n>", "most DMs (anycasts) one sender may have waiting for one recipient (role) (default 10000)")
    .option("--max-disk <size>", "static mode: JetStream disk the space may use in all (default 4GiB)")
    .option("--max-memory <size>", "static mode: JetStream memory the space may use in all (default 256MiB)")
    .option("--max-connections <n>", "static mode: connections every credential of the space may hold together, and so the most one may open (default 256)")
    .option("--cluster <n>", "run a local JetStream cluster of n nodes (3 or 5; ports from --port upwards); streams are created with 3 replicas")
    .option("--leaf-port <n>", "open a leaf-node listener for remote hosts on this port (a cluster: one per node, from n upwards)")
    .option("--leaf-host <host>", "address of the leaf-node listener (default: --host)")
    .option("--leaf-tls-cert <file>", "PEM certificate the leaf-node listener presents (with --leaf-tls-key)")
    .option("--leaf-tls-key <file>", "PEM private key of --leaf-tls-cert")
    .option("--leaf-tls-ca <file>", "PEM CA: leaf hosts must present a client certificate it signed (mutual TLS)")
    .option(
      "--sync <always|duration>",
      "when JetStream syncs writes to disk: always (default: fsync before every acknowledgement, so acknowledged mail survives a power cut) or a duration such as 2m (faster; the last interval's acknowledged writes can be lost)",
    )
    .option("--leaf-insecure", "allow a leaf-node listener without TLS on a non-loopback address")
    .option("-f, --file <path>", "converge the mesh to a cotal.yaml (docs/team-file.md): start it, then create, change and retire what the file declares")
    .option("--dry-run", "with --file: print the plan and change nothing")
    .option("-y, --yes", "with --file: retire the seats the file no longer declares without asking (needed where there is no terminal to ask at)")
    .option(
      "--me <name>",
      "who you are on this mesh (default: your OS login name; kept for later runs): `cotal up` mints you a credential of your own, which commands here speak and read with",
    )
    .option("--json", "print what was found and done as JSON");
  addAuthOptions(up, "the host manager's").action(async (raw: Record<string, unknown>) => {
    // A team file gives the flags the command line does not (docs/team-file.md).
    const team = typeof raw.file === "string" ? loadTeamFile(raw.file) : undefined;
    for (const n of team?.notes ?? []) warn(n);
    const server = team ? teamServerFlags(team) : undefined;
    const given = Object.fromEntries(Object.entries(raw).filter(([, v]) => v !== undefined));
    const flags = parseInput(UpFlags, server ? { ...server.flags, ...given } : raw);
    if (flags.dryRun && !team) throw new UsageError("--dry-run plans a team file.", { remedy: "Add --file cotal.yaml, or leave out --dry-run." });
    const root = findMeshRoot() ?? new MeshRoot(process.cwd());
    const prev = root.readInfo();
    // Refused before anything starts: a name that cannot be a principal is never rewritten.
    const me = flags.dryRun ? undefined : chooseMe(root, flags.me);
    const print = flags.json ? undefined : (lines: string[]) => printLines(...lines);
    if (team && server && prev && (await serverAnswers({ server: prev.server, creds: flags.creds ?? defaultCreds(root, prev) })))
      refuseServerDrift(team, server, new Set(Object.keys(given)), flags, prev);
    if (team && flags.dryRun) {
      const r = await planOnly(root, team, flags.space ?? prev?.space ?? DEFAULT_SPACE, { print, creds: flags.creds });
      if (flags.json) printJson(r);
      return;
    }
    const choice = chooseMode({ open: flags.open, host: flags.host ?? prev?.host ?? "127.0.0.1" });
    for (const w of choice.warnings) warn(w);
    const leaf = checkLeafFlags(flags, flags.host ?? prev?.host ?? "127.0.0.1");
    if (leaf?.insecure)
      warn(`the leaf-node listener on ${leaf.host}:${leaf.port} has no TLS (--leaf-insecure): leaf traffic crosses the network in clear text.`);
    if (leaf && choice.mode === "open" && !isLoopback(leaf.host) && !leaf.tls?.ca) {
      warn(
        `open mode: any host that reaches ${leaf.host}:${leaf.port} may join as a leaf node and read every message (pass --leaf-tls-ca to require client certificates).`,
      );
    }
    // From here an interruption or a failure stops what this run started (cli/mesh-host/up-guard.ts).
    const guard = guardUp(root);
    let report: UpReport;
    let teamResult: TeamResult | undefined;
    try {
      report = await bringUp(root, {
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
          eventsBytes: flags.eventsBytes,
          chatPerSender: flags.chatPerSender,
          chatMaxAgeMs: flags.chatMaxAge,
          backlogPerSender: flags.dmBacklog,
        }),
        account: definedOnly({ diskBytes: flags.maxDisk, memoryBytes: flags.maxMemory, connections: flags.maxConnections }),
        cluster: flags.cluster,
        leaf,
        sync: flags.sync,
        auth: authChoices(raw),
        me,
      });
      if (!flags.json) printLines(...describeUp(report));
      if (team) {
        teamResult = await converge(root, team, report.space, { print, creds: flags.creds, yes: flags.yes });
        if (teamResult.done.some((d) => !d.ok)) process.exitCode = EXIT.failed;
      }
    } catch (err) {
      const stopped = await guard.undo();
      if (stopped.length) note(`Stopped what this \`cotal up\` had started: ${stopped.join(", ")}.`);
      throw err;
    }
    await guard.release();
    if (flags.json) printJson({ ...report, warnings: choice.warnings, detached: !!flags.detach, ...(teamResult ? { team: teamResult } : {}) });
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
    ...(r.nodes
      ? [
          `server:       ${r.server}  (a cluster of ${r.nodes.length}; streams at R${r.replicas})`,
          ...r.nodes.map((n) => `  ${n.name.padEnd(14)} port ${n.port}, pid ${n.pid}, ${n.state === "running" ? "already running" : "started"}`),
        ]
      : [`server:       ${r.server}  (nats-server ${nats}, pid ${r.natsServer.pid})`]),
    `space:        ${r.space}  (${formatProvision(r.provision)})`,
    `mesh service: ${svc}, pid ${r.meshService.pid}`,
    `manager:      ${r.manager.instance} ${r.manager.state === "running" ? "already running" : r.manager.state === "restarted" ? "restarted (it did not answer)" : "started"}, pid ${r.manager.pid}  (seats: \`cotal spawn\`)`,
    `mode:         ${r.mode}${r.mode === "open" ? " (no authentication)" : " (authentication required; commands here use your credential or the operator's in .cotal/auth, others need `cotal mint`)"}`,
    ...(r.person ? [`you:          ${describePerson(r.person)}`] : []),
    ...authLines(r.manager.runtimes),
    `durability:   sync ${describeSync(r.sync)}`,
    `logs:         ${r.nodes ? r.nodes.map((n) => n.log).join(", ") : r.natsServer.log}, ${r.meshService.log}, ${r.manager.log}`,
    ...r.notes.map((n) => `note:         ${n}`),
  ];
}

/** The `you:` line of `cotal up`: who commands here speak and read as. */
function describePerson(p: PersonUp): string {
  const how = {
    minted: "credential minted",
    reminted: "credential minted again",
    kept: "credential kept",
    open: "an open mesh verifies no names",
    conflict: "not minted (see the note)",
  }[p.state];
  return p.state === "conflict"
    ? `${p.name}  (${how})`
    : `${p.name}  (${how}${p.creds ? `: ${p.creds}` : ""}; \`cotal send\`, \`listen\`, \`inbox\` and \`console\` here act as you)`;
}

/**
 * Foreground `up`: stay until Ctrl-C / SIGTERM, then stop the manager, the mesh service and nats-server.
 * If either exits on its own, stop the other and exit 1; if `cotal down` stopped them, exit 0.
 */
async function attach(root: MeshRoot): Promise<void> {
  const info = root.readInfo();
  // Every nats-server of the mesh: the single one, or each node of a cluster.
  const natsFiles = info ? meshNodes(root, info).map((n) => n.pidFile) : [root.pidFile("nats-server")];
  const svcFile = root.pidFile("mesh-service");
  const natsRecs = natsFiles.map((f) => [f, readRecord(f)] as const).filter((e): e is readonly [string, ProcessRecord] => !!e[1]);
  const svc = readRecord(svcFile);
  const mgrFile = root.pidFile("manager");
  const mgr = readRecord(mgrFile);
  if (natsRecs.length === 0 || !svc) return;
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
    if (same(svcFile, svc)) {
      await stopProcess(svc);
      removeRecord(svcFile);
    }
    // A cluster's nodes stop together (one by one, the last would wait for a quorum that is gone).
    await Promise.all(
      natsRecs.map(async ([file, rec]) => {
        if (!same(file, rec)) return;
        await stopProcess(rec);
        removeRecord(file);
      }),
    );
    note("Mesh stopped.");
    process.exit(code);
  };
  const watch = setInterval(() => {
    const lock = readRecord(root.lockFile);
    if (lock && isRunning(lock)) return; // a cotal up/down is at work; judge after it finished
    if (natsRecs.every(([file, rec]) => !same(file, rec)) || !same(svcFile, svc)) {
      // Another cotal command took over: `cotal down` stopped the mesh, or `cotal up` replaced a process.
      stopping = true;
      clearInterval(watch);
      const stopped = natsRecs.every(([file, rec]) => !readRecord(file) && !isRunning(rec));
      note(stopped ? "The mesh was stopped by `cotal down`." : "The mesh is now looked after by another `cotal up`; detaching (it keeps running).");
      process.exit(EXIT.ok);
    }
    // A cluster keeps serving while one node is down (`cotal up` restarts it); the mesh stops when none is left.
    const dead = natsRecs.filter(([, rec]) => !isRunning(rec));
    if (dead.length === natsRecs.length)
      void stopAll(`nats-server (pid ${natsRecs.map(([, r]) => r.pid).join(", ")}) exited; see ${root.logsDir}.`, EXIT.failed);
    else if (!isRunning(svc)) void stopAll(`The mesh service (pid ${svc.pid}) exited; see ${root.log("mesh-service")}.`, EXIT.failed);
  }, 500);
  for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
    process.on(sig, () => void stopAll(`Received ${sig}; stopping the mesh.`, EXIT.ok));
  }
  await new Promise<never>(() => undefined);
}

import { mkdirSync } from "node:fs";
import { connectMesh, ensureSpace, type AccountStorageLimits, type ProvisionReport, type StorageLimits } from "../broker/index.js";
import { DEFAULT_SPACE } from "./context.js";
import { CommandFailedError, UsageError } from "./errors.js";
import { acquireLock, claimStore, releaseStaleStore, StoreInUseError, storeLockHolder, type StoreLockRecord } from "./lock.js";
import type { MeshInfo, MeshRoot } from "./mesh-root.js";
import type { MeshMode } from "./mode.js";
import { findNatsServers, startNatsServer } from "./nats-process.js";
import { isRunning, ProcessRecord, readRecordFile, removeRecord, stopProcess, writeRecord, type RecordRead } from "./pid-file.js";
import { DEFAULT_PORT, portIsFree } from "./ports.js";
import { pingMeshService, serverAnswers } from "./probe.js";
import { ensureManager, stopManager, type ManagerUp } from "./manager-process.js";
import { findMeshServices, startMeshService } from "./service-process.js";
import { prepareStaticAuth, publishSpaceAccount } from "./static-auth.js";

/** What `cotal up` was asked for; unset fields come from the last run's mesh.json, then defaults. */
export interface UpRequest {
  mode: MeshMode;
  space?: string | undefined;
  port?: number | undefined;
  host?: string | undefined;
  storeDir?: string | undefined;
  creds?: string | undefined;
  /** Stream limits (kept in mesh.json for later runs); unset: the last run's, then the defaults. */
  limits?: Partial<StorageLimits> | undefined;
  /** Static mode: the data account's JetStream storage (kept in the auth store). */
  account?: Partial<AccountStorageLimits> | undefined;
}

/** What `cotal up` found and did. */
export interface UpReport {
  root: string;
  server: string;
  space: string;
  mode: MeshMode;
  natsServer: { state: "running" | "started"; pid: number; port: number; log: string };
  /** `repaired`: the server was running but its mesh service was not (or did not answer). */
  meshService: { state: "running" | "started" | "repaired" | "restarted"; pid: number; log: string };
  /** The mesh host's manager (seats: `cotal spawn`). */
  manager: ManagerUp;
  provision: ProvisionReport;
  /** Things worth telling the user (a port fallback, a stale pid file). */
  notes: string[];
}

const DEFAULT_HOST = "127.0.0.1";

/**
 * Bring the mesh of `root` up, or find it up: nats-server, the space's streams and buckets,
 * the mesh service. Idempotent: what runs and answers is left alone; a dead or silent mesh
 * service is restarted.
 */
export async function bringUp(root: MeshRoot, req: UpRequest): Promise<UpReport> {
  root.ensure();
  const release = acquireLock(root.lockFile, "starting or stopping");
  try {
    return await up(root, req);
  } finally {
    release();
  }
}

async function up(root: MeshRoot, req: UpRequest): Promise<UpReport> {
  const notes: string[] = [];
  const prev = root.readInfo();
  const auth = req.mode === "static" ? await prepareStaticAuth(root, req.space ?? prev?.space ?? DEFAULT_SPACE, req.account) : undefined;
  // Commands on the mesh host connect with its own operator-side credential unless told otherwise.
  if (auth && !req.creds) req = { ...req, creds: auth.cliCreds };
  const natsFile = root.pidFile("nats-server");
  const natsRead = readRecordFile(natsFile);
  const natsRec = locateNatsServer(root, natsRead, [prev?.storeDir, req.storeDir ?? prev?.storeDir ?? root.defaultStoreDir], notes);
  let info: MeshInfo;
  let natsState: UpReport["natsServer"]["state"];
  let nats: ProcessRecord;

  if (natsRec && prev) {
    refuseConflicts(root, prev, req);
    if (auth?.spaceCreated) await publishSpaceAccount(auth, prev.server, prev.space);
    if (!(await answersWithin({ server: prev.server, creds: req.creds }, 5_000))) {
      throw new CommandFailedError(`nats-server (pid ${natsRec.pid}) is running but does not answer at ${prev.server}.`, {
        remedy: `See ${root.log("nats-server")}; \`cotal down\` then \`cotal up\` restarts it.`,
      });
    }
    info = prev;
    nats = natsRec;
    natsState = "running";
  } else {
    if (natsRec) {
      await stopProcess(natsRec, 15_000); // running without a mesh.json: we cannot tell its settings
      notes.push(`stopped nats-server pid ${natsRec.pid}: its mesh.json was missing; started a new one`);
    } else if (natsRead.kind === "ok") {
      notes.push(`nats-server pid ${natsRead.record.pid} from an earlier run is gone; started a new one`);
    }
    removeRecord(natsFile);
    const host = req.host ?? prev?.host ?? DEFAULT_HOST;
    const space = req.space ?? prev?.space ?? DEFAULT_SPACE;
    const storeDir = req.storeDir ?? prev?.storeDir ?? root.defaultStoreDir;
    const wanted = req.port ?? prev?.port ?? DEFAULT_PORT;
    let port: number | "auto" = wanted;
    if (!(await portIsFree(host, wanted))) {
      if (req.port !== undefined) {
        throw new CommandFailedError(`Port ${wanted} on ${host} is already in use.`, {
          remedy: "Pick another with --port, or leave --port out and cotal picks a free one.",
        });
      }
      port = "auto";
    }
    mkdirSync(storeDir, { recursive: true, mode: 0o700 });
    // One server per store, for the server's whole life (see claimStore).
    const claim = claimStore(storeDir, root.dir);
    let started: Awaited<ReturnType<typeof startNatsServer>>;
    try {
      started = await startNatsServer(
        root,
        { host, port, storeDir, portsDir: root.runDir, space, auth: auth?.fragment },
        { creds: req.creds, onSpawn: (rec) => claim.handTo(rec) },
      );
    } catch (err) {
      claim.release();
      throw err;
    }
    writeRecord(natsFile, started.record);
    if (port === "auto") notes.push(`port ${wanted} on ${host} is in use; nats-server listens on ${started.port} instead`);
    const limits = { ...prev?.limits, ...req.limits };
    info = { server: started.url, space, mode: req.mode, host, port: started.port, storeDir, startedAt: new Date().toISOString(), ...(Object.keys(limits).length ? { limits } : {}) };
    root.writeInfo(info);
    nats = started.record;
    natsState = "started";
  }

  // Streams live in the data account: only the mesh service's credential may create them.
  const nc = await connectMesh({ server: info.server, creds: auth ? auth.meshCreds : req.creds, name: "cotal-up" });
  let provision: ProvisionReport;
  try {
    provision = await ensureSpace(nc, info.space, info.limits ? { limits: info.limits } : {});
  } finally {
    await nc.close().catch(() => undefined);
  }

  const svcFile = root.pidFile("mesh-service");
  const svcRec = await locateMeshService(root, notes);
  const target = {
    server: info.server,
    space: info.space,
    creds: req.creds,
    ...(auth ? { serviceCreds: auth.meshCreds, authDir: root.authDir } : {}),
    ...(info.limits ? { limits: info.limits } : {}),
  };
  let svcState: UpReport["meshService"]["state"];
  let svc: ProcessRecord;
  const svcAlive = svcRec !== undefined && isRunning(svcRec);
  if (svcRec && svcAlive && natsState === "running" && (await serviceAnswers(target, svcRec.pid))) {
    svc = svcRec;
    svcState = "running";
  } else {
    if (svcRec && svcAlive) {
      notes.push(
        natsState === "started"
          ? `stopped the mesh service pid ${svcRec.pid} left over from the previous server`
          : `the mesh service pid ${svcRec.pid} was running but did not answer; restarted it`,
      );
      await stopProcess(svcRec, 5_000);
    } else if (svcRec && natsState === "running") {
      notes.push(`the mesh service pid ${svcRec.pid} was gone; restarted it`);
    } else if (natsState === "running" && !notes.some((n) => n.startsWith("run/mesh-service.json"))) {
      notes.push("no mesh service was recorded; started one");
    }
    removeRecord(svcFile);
    svc = await startMeshService(root, target);
    writeRecord(svcFile, svc);
    svcState = natsState === "started" ? "started" : svcAlive ? "restarted" : "repaired";
  }
  const manager = await ensureManager(root, { server: info.server, space: info.space, creds: req.creds }, notes);
  return {
    root: root.dir,
    server: info.server,
    space: info.space,
    mode: info.mode,
    natsServer: { state: natsState, pid: nats.pid, port: info.port, log: root.log("nats-server") },
    meshService: { state: svcState, pid: svc.pid, log: root.log("mesh-service") },
    manager,
    provision,
    notes,
  };
}

/** What a pid file said, for notes. */
function describeRead(r: RecordRead): string {
  if (r.kind === "absent") return "was missing";
  if (r.kind === "invalid") return `was unreadable (${r.reason})`;
  return `named pid ${r.record.pid}, which is gone`;
}

/**
 * The running nats-server of this mesh: by its pid file; else (the file missing, unreadable or
 * stale) by the lock on its store, else by its command line. A server found so is recorded
 * again, so a lost pid file never leads to a second server on the same store. A store held by
 * another mesh's server is refused.
 */
function locateNatsServer(root: MeshRoot, read: RecordRead, stores: Array<string | undefined>, notes: string[]): ProcessRecord | undefined {
  if (read.kind === "ok" && isRunning(read.record)) return read.record;
  const file = root.pidFile("nats-server");
  for (const store of new Set(stores.filter((d): d is string => !!d))) {
    const holder = storeLockHolder(store);
    if (!holder) continue;
    if (holder.meshRoot !== root.dir || !isNatsServerCommand(holder.command)) throw new StoreInUseError(store, holder);
    const rec = ProcessRecord.parse(holder);
    writeRecord(file, rec);
    notes.push(`run/nats-server.json ${describeRead(read)}; found nats-server pid ${rec.pid} by the lock on its store ${store}`);
    return rec;
  }
  const [found] = findNatsServers(root);
  if (found) {
    writeRecord(file, found);
    notes.push(`run/nats-server.json ${describeRead(read)}; found nats-server pid ${found.pid} by its command line`);
  }
  return found;
}

function isNatsServerCommand(argv: string[]): boolean {
  return /(^|\/)nats-server$/.test(argv[0] ?? "");
}

/**
 * The mesh service of this mesh: by its pid file; else by looking for the process itself
 * (see findMeshServices). Mesh services beyond the one kept are stopped: one per mesh.
 */
async function locateMeshService(root: MeshRoot, notes: string[]): Promise<ProcessRecord | undefined> {
  const file = root.pidFile("mesh-service");
  const read = readRecordFile(file);
  let rec = read.kind === "ok" ? read.record : undefined;
  const others = findMeshServices(root).filter((p) => !(rec && p.pid === rec.pid && p.startTime === rec.startTime));
  if (!rec || !isRunning(rec)) {
    const found = others.shift();
    if (found) {
      writeRecord(file, found);
      notes.push(`run/mesh-service.json ${describeRead(read)}; found the mesh service pid ${found.pid} running`);
      rec = found;
    } else if (read.kind === "invalid") {
      notes.push(`run/mesh-service.json ${describeRead(read)} and no mesh service was running; started one`);
    }
  }
  for (const extra of others) {
    await stopProcess(extra, 5_000);
    notes.push(`stopped a second mesh service, pid ${extra.pid} (one per mesh)`);
  }
  return rec;
}

/** Flags that would change a running mesh are refused rather than silently ignored. */
function refuseConflicts(root: MeshRoot, prev: MeshInfo, req: UpRequest): void {
  const diffs: string[] = [];
  if (req.port !== undefined && req.port !== prev.port) diffs.push(`--port ${req.port} (it listens on ${prev.port})`);
  if (req.host !== undefined && req.host !== prev.host) diffs.push(`--host ${req.host} (it listens on ${prev.host})`);
  if (req.space !== undefined && req.space !== prev.space) diffs.push(`--space ${req.space} (it serves ${prev.space})`);
  if (req.storeDir !== undefined && req.storeDir !== prev.storeDir) diffs.push(`--store-dir ${req.storeDir} (it stores in ${prev.storeDir})`);
  if (req.limits && JSON.stringify({ ...prev.limits, ...req.limits }) !== JSON.stringify(prev.limits ?? {})) diffs.push(`storage limits ${JSON.stringify(req.limits)} (it runs with ${JSON.stringify(prev.limits ?? "the defaults")})`);
  if (req.mode !== prev.mode) diffs.push(`${req.mode === "open" ? "--open" : "static auth (no --open)"} (it runs ${prev.mode})`);
  if (diffs.length) {
    throw new UsageError(`The mesh in ${root.dir} is already running with other settings: ${diffs.join(", ")}.`, {
      remedy: "Run `cotal down` first to change them, or leave those flags out.",
    });
  }
}

async function answersWithin(addr: { server: string; creds?: string | undefined }, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await serverAnswers(addr)) return true;
    if (Date.now() >= deadline) return false;
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Does the mesh service with this pid answer a ping? (Asks a few times: the rail is a queue group.) */
async function serviceAnswers(t: { server: string; space: string; creds?: string | undefined }, pid: number): Promise<boolean> {
  const nc = await connectMesh({ server: t.server, creds: t.creds, name: "cotal-up" });
  try {
    for (let i = 0; i < 6; i++) {
      const ping = await pingMeshService(nc, t.space, 1_000);
      if (ping?.pid === pid) return true;
    }
    return false;
  } finally {
    await nc.close().catch(() => undefined);
  }
}

/** What `cotal down` did to each process. */
export interface DownReport {
  root: string;
  /** Stopped first: it stops its seats, which need the mesh to say goodbye. */
  manager: { pid?: number; result: "stopped" | "killed" | "not-running" | "not-recorded" };
  meshService: { pid?: number; result: "stopped" | "killed" | "not-running" | "not-recorded" };
  natsServer: { pid?: number; result: "stopped" | "killed" | "not-running" | "not-recorded" };
}

/**
 * Stop the mesh service, then nats-server (each verified by pid and start time); remove pid
 * files. A pid file that is missing or unreadable does not leave its process running: the
 * mesh service is then found by its command line, nats-server by the lock on its store.
 */
export async function bringDown(root: MeshRoot): Promise<DownReport> {
  root.ensure();
  const release = acquireLock(root.lockFile, "starting or stopping");
  try {
    let info: MeshInfo | undefined;
    try {
      info = root.readInfo();
    } catch {
      info = undefined; // an unreadable mesh.json must not keep `down` from stopping anything
    }
    const stop = async (file: string, found: ProcessRecord[], graceMs: number): Promise<DownReport["meshService"]> => {
      const read = readRecordFile(file);
      const rec = read.kind === "ok" ? read.record : undefined;
      const live = found.filter((p) => !(rec && p.pid === rec.pid && p.startTime === rec.startTime));
      let report: DownReport["meshService"] = rec ? { pid: rec.pid, result: await stopProcess(rec, graceMs) } : { result: "not-recorded" };
      for (const p of live) {
        const result = await stopProcess(p, graceMs);
        if (report.result === "not-recorded" || report.result === "not-running") report = { pid: p.pid, result };
      }
      removeRecord(file);
      return report;
    };
    const manager = await stopManager(root);
    const meshService = await stop(root.pidFile("mesh-service"), findMeshServices(root), 10_000);
    const stores = [...new Set([info?.storeDir, root.defaultStoreDir].filter((d): d is string => !!d))];
    const servers = [
      ...stores
        .map(storeLockHolder)
        .filter((h): h is StoreLockRecord => !!h && h.meshRoot === root.dir && isNatsServerCommand(h.command))
        .map((h) => ProcessRecord.parse(h)),
      ...findNatsServers(root),
    ];
    const natsServer = await stop(root.pidFile("nats-server"), uniqueProcesses(servers), 15_000);
    for (const store of stores) releaseStaleStore(store);
    return { root: root.dir, manager, meshService, natsServer };
  } finally {
    release();
  }
}

function uniqueProcesses(recs: ProcessRecord[]): ProcessRecord[] {
  const seen = new Set<string>();
  return recs.filter((r) => {
    const key = `${r.pid}/${r.startTime}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

import { randomBytes } from "node:crypto";
import { JetStreamApiError } from "@nats-io/jetstream";
import { mkdirSync, rmSync } from "node:fs";
import {
  clientsAccount,
  connectMesh,
  DEFAULT_ACCOUNT_STORAGE,
  ensureSpace,
  StreamConflictError,
  type AccountStorageLimits,
  type ProvisionReport,
  type StorageLimits,
  readSecret,
  writeSecret,
} from "../../broker/index.js";
import { ephemeralPort, meshNodes, singleNode, type NodeFiles } from "./cluster-nodes.js";
import type { LeafListener } from "./leaf-listener.js";
import { DEFAULT_SPACE } from "../mesh-client/mesh-target.js";
import { CommandFailedError, UsageError } from "../terminal/errors.js";
import { acquireLock, claimStore, releaseStaleStore, StoreInUseError, storeLockHolder, type StoreLockRecord } from "./lock.js";
import type { ClusterInfo, MeshInfo, MeshRoot } from "./mesh-root.js";
import type { MeshMode } from "./mode.js";
import { connectHost, findNatsServers, ROUTE_USER, startNatsServer, type ServerConfig } from "./nats-process.js";
import { isRunning, ProcessRecord, readRecordFile, removeRecord, stopProcess, writeRecord, type RecordRead } from "./pid-file.js";
import { DEFAULT_PORT, portIsFree } from "./ports.js";
import { pingMeshService, serverAnswers } from "./probe.js";
import { ensureManager, stopManager, type ManagerUp } from "./manager-process.js";
import { ensurePerson, readPerson, type PersonUp } from "../identity/person.js";
import { authChoices, type AuthChoices } from "./runtime-auth.js";
import { findMeshServices, startMeshService } from "./service-process.js";
import { DEFAULT_SYNC, describeSync } from "./sync-interval.js";
import { prepareStaticAuth, publishSpaceAccount, type StaticAuth } from "./static-auth.js";
import { noteStarted } from "./up-guard.js";

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
  /** `--cluster N`: nodes of a local JetStream cluster (1: a single server); unset: as last time. */
  cluster?: number | undefined;
  /** `--leaf-port …`: a leaf-node listener for remote hosts; unset: as last time. */
  leaf?: LeafListener | undefined;
  /** `--sync`: JetStream's sync_interval (`always` or a duration); unset: as last time, then `always`. */
  sync?: string | undefined;
  /** `--<runtime>-auth`: how the host manager's seats and runs of each runtime with a choice authenticate (runtime-auth.ts); unset: COTAL_<RUNTIME>_AUTH, then auto. */
  auth?: AuthChoices | undefined;
  /** The person at the mesh host (`--me`, cli/person.ts); unset: the one recorded here, if any. */
  me?: string | undefined;
}

/** One node of a local cluster, as `up` found or started it. */
export interface NodeUp {
  name: string;
  state: "running" | "started";
  pid: number;
  port: number;
  log: string;
}

/** What `cotal up` found and did. */
export interface UpReport {
  root: string;
  server: string;
  space: string;
  mode: MeshMode;
  natsServer: { state: "running" | "started"; pid: number; port: number; log: string };
  /** `--cluster N`: every node (natsServer is the first one). */
  nodes?: NodeUp[];
  /** Replicas of the streams created now (3 on a cluster of three or more). */
  replicas: number;
  /** `repaired`: the server was running but its mesh service was not (or did not answer). */
  meshService: { state: "running" | "started" | "repaired" | "restarted"; pid: number; log: string };
  /** The mesh host's manager (seats: `cotal spawn`). */
  manager: ManagerUp;
  provision: ProvisionReport;
  /** JetStream's sync_interval in force: `always` or a duration (unset: started before cotal set it). */
  sync?: string;
  /** The person at the mesh host, whose credential commands here speak and read with. */
  person?: PersonUp;
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
  const auth = req.mode === "static" ? await prepareStaticAuth(root, req.space ?? prev?.space ?? DEFAULT_SPACE, accountLimits(req, prev)) : undefined;
  // Commands on the mesh host connect with its own operator-side credential unless told otherwise.
  if (auth && !req.creds) req = { ...req, creds: auth.cliCreds };
  const servers =
    (prev?.cluster ? await adoptCluster(root, prev, req, auth, notes) : await adoptSingle(root, prev, req, auth, notes)) ??
    (await startFresh(root, prev, req, auth, notes));
  const { info, state: natsState } = servers;
  if (info.cluster && !info.cluster.routeAuth) {
    notes.push(
      "this cluster's routes are not authenticated (it was made before `cotal up` gave clusters a route password): any nats-server on this host could join it; make it again (`cotal down`, move the cluster store aside, `cotal up --cluster N`) to close that",
    );
  }
  const replicas = info.cluster && info.cluster.nodes.length >= 3 ? 3 : 1;

  // Streams live in the data account: only the mesh service's credential may create them.
  const addr = { server: info.server, creds: auth ? auth.meshCreds : req.creds };
  let provision: ProvisionReport | undefined;
  for (let attempt = 1; !provision; attempt++) {
    const reform = servers.fresh === true && attempt < FORM_ATTEMPTS;
    try {
      provision = await provisionSpace(addr, info, replicas, reform ? FRESH_STALL_MS : CLUSTER_PROVISION_MS);
    } catch (err) {
      if (!reform || err instanceof StreamConflictError) throw err;
      notes.push(`the new cluster's nodes did not take the space's streams within ${FRESH_STALL_MS / 1000} s (${(err as Error).message}); formed it again`);
      Object.assign(servers, await reformCluster(root, info, auth, req.creds));
    }
  }
  const nats = servers.record;

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
  const manager = await ensureManager(root, { server: info.server, space: info.space, creds: req.creds }, notes, req.auth ?? authChoices({}));
  const me = req.me ?? readPerson(root)?.name;
  const person = me ? await ensurePerson(root, { server: info.server, space: info.space, creds: auth ? req.creds : undefined }, me, notes) : undefined;
  return {
    root: root.dir,
    server: info.server,
    space: info.space,
    mode: info.mode,
    natsServer: { state: natsState, pid: nats.pid, port: info.port, log: servers.nodes?.[0]?.log ?? root.log("nats-server") },
    ...(servers.nodes ? { nodes: servers.nodes } : {}),
    replicas,
    meshService: { state: svcState, pid: svc.pid, log: root.log("mesh-service") },
    manager,
    provision,
    ...(info.sync ? { sync: info.sync } : {}),
    ...(person ? { person } : {}),
    notes,
  };
}

/** The nats-server side of `up`: the mesh description in force, and whether its servers were running. */
interface ServersUp {
  info: MeshInfo;
  state: UpReport["natsServer"]["state"];
  /** The single server, or the cluster's first node. */
  record: ProcessRecord;
  nodes?: NodeUp[];
  /** A cluster this run created (empty stores): formed again when its nodes do not agree on their members. */
  fresh?: boolean;
}

/** The running single server of the previous run, adopted (undefined: none runs, start afresh). */
async function adoptSingle(
  root: MeshRoot,
  prev: MeshInfo | undefined,
  req: UpRequest,
  auth: StaticAuth | undefined,
  notes: string[],
): Promise<ServersUp | undefined> {
  const natsRead = readRecordFile(root.pidFile("nats-server"));
  const natsRec = locateNatsServer(root, natsRead, [prev?.storeDir, req.storeDir ?? prev?.storeDir ?? root.defaultStoreDir], notes);
  if (!natsRec || !prev) {
    if (natsRead.kind === "ok" && !natsRec) notes.push(`nats-server pid ${natsRead.record.pid} from an earlier run is gone; started a new one`);
    return undefined;
  }
  refuseConflicts(root, prev, req);
  if (auth?.spaceCreated) await publishSpaceAccount(auth, prev.server, prev.space);
  if (!(await answersWithin({ server: prev.server, creds: req.creds }, 5_000))) {
    throw new CommandFailedError(`nats-server (pid ${natsRec.pid}) is running but does not answer at ${prev.server}.`, {
      remedy: `See ${root.log("nats-server")}; \`cotal down\` then \`cotal up\` restarts it.`,
    });
  }
  return { info: prev, state: "running", record: natsRec };
}

/**
 * The running cluster of the previous run, adopted: while any node runs the cluster is up, and a
 * node that is not running is started again on its recorded ports (it catches up from the others).
 */
async function adoptCluster(root: MeshRoot, prev: MeshInfo, req: UpRequest, auth: StaticAuth | undefined, notes: string[]): Promise<ServersUp | undefined> {
  const cluster = prev.cluster!;
  const nodes = meshNodes(root, prev);
  const live = nodes.map((n) => {
    const r = readRecordFile(n.pidFile);
    return r.kind === "ok" && isRunning(r.record) ? r.record : undefined;
  });
  if (!live.some(Boolean)) return undefined;
  refuseConflicts(root, prev, req);
  if (auth?.spaceCreated) await publishSpaceAccount(auth, prev.server, prev.space);
  const up: NodeUp[] = [];
  for (const [i, n] of nodes.entries()) {
    const port = cluster.nodes[i]!.port;
    let rec = live[i];
    if (!rec) {
      rec = await startClusterNode(root, prev, n, auth, req.creds);
      notes.push(`${n.name} was not running; started it again on port ${port}`);
    }
    up.push({ name: n.name, state: live[i] ? "running" : "started", pid: rec.pid, port, log: n.log });
  }
  if (!(await answersWithin({ server: prev.server, creds: req.creds }, 5_000))) {
    throw new CommandFailedError(`The cluster's nodes are running but none answers at ${prev.server}.`, {
      remedy: `See ${nodes.map((n) => n.log).join(", ")}; \`cotal down\` then \`cotal up\` restarts them.`,
    });
  }
  return { info: prev, state: "running", record: (live.find(Boolean) ?? live[0])!, nodes: up };
}

/** Start the servers afresh: one, or `--cluster N` nodes. Live servers of this mesh without a usable mesh.json are stopped first. */
async function startFresh(root: MeshRoot, prev: MeshInfo | undefined, req: UpRequest, auth: StaticAuth | undefined, notes: string[]): Promise<ServersUp> {
  for (const rec of findNatsServers(root)) {
    await stopProcess(rec, 15_000); // running without a mesh.json we can trust: we cannot tell its settings
    notes.push(`stopped nats-server pid ${rec.pid}: its mesh.json was missing or described another mesh; started a new one`);
  }
  for (const n of prev ? meshNodes(root, prev) : []) removeRecord(n.pidFile);
  removeRecord(root.pidFile("nats-server"));
  const host = req.host ?? prev?.host ?? DEFAULT_HOST;
  const space = req.space ?? prev?.space ?? DEFAULT_SPACE;
  const storeDir = req.storeDir ?? prev?.storeDir ?? root.defaultStoreDir;
  const wanted = req.port ?? prev?.port ?? DEFAULT_PORT;
  const size = req.cluster ?? prev?.cluster?.nodes.length ?? 1;
  const leaf = req.leaf ?? prev?.leaf;
  const limits = { ...prev?.limits, ...req.limits };
  const base = {
    space,
    sync: req.sync ?? prev?.sync ?? DEFAULT_SYNC,
    mode: req.mode,
    host,
    storeDir,
    startedAt: new Date().toISOString(),
    ...(Object.keys(limits).length ? { limits } : {}),
    ...(leaf ? { leaf } : {}),
  };
  if (leaf) {
    for (let i = 0; i < size; i++) {
      if (!(await portIsFree(leaf.host, leaf.port + i))) {
        throw new CommandFailedError(`Leaf-node port ${leaf.port + i} on ${leaf.host} is already in use.`, {
          remedy: `Pick another with --leaf-port${size > 1 ? ` (a cluster uses ${size} ports from it)` : ""}.`,
        });
      }
    }
  }
  if (size > 1) return startCluster(root, { ...base, server: "", port: wanted }, size, req, auth, notes);

  const node = singleNode(root, space, storeDir);
  let port: number | "auto" = wanted;
  if (!(await portIsFree(host, wanted))) {
    if (req.port !== undefined) {
      throw new CommandFailedError(`Port ${wanted} on ${host} is already in use.`, {
        remedy: "Pick another with --port, or leave --port out and cotal picks a free one.",
      });
    }
    port = "auto";
  }
  const started = await startNode(
    root,
    node,
    {
      host,
      port,
      space,
      sync: base.sync,
      auth: auth?.fragment,
      leaf: leaf ? { listener: leaf, port: leaf.port, account: leafAccount(auth, space) } : undefined,
    },
    req.creds,
  );
  if (port === "auto") notes.push(`port ${wanted} on ${host} is in use; nats-server listens on ${started.port} instead`);
  const info: MeshInfo = { ...base, server: started.url, port: started.port };
  root.writeInfo(info);
  return { info, state: "started", record: started.record };
}

/**
 * `cotal up --cluster N`: N nodes on `host`, client ports from `--port` upwards (a taken one is
 * replaced by a free one unless --port was given), route ports chosen free, each node with its
 * own store; they form one JetStream cluster named `cotal_<space>`. Static meshes give every
 * node the same operator and accounts, so any node accepts any credential.
 */
async function startCluster(root: MeshRoot, base: MeshInfo, size: number, req: UpRequest, auth: StaticAuth | undefined, notes: string[]): Promise<ServersUp> {
  const ports: number[] = [];
  for (let i = 0; i < size; i++) {
    const want = base.port + i;
    if (await portIsFree(base.host, want)) ports.push(want);
    else if (req.port !== undefined) {
      throw new CommandFailedError(`Port ${want} on ${base.host} is already in use (a cluster of ${size} uses ${size} ports from --port ${req.port}).`, {
        remedy: "Pick another --port.",
      });
    } else {
      const free = await ephemeralPort(base.host);
      notes.push(`port ${want} on ${base.host} is in use; node ${i + 1} listens on ${free} instead`);
      ports.push(free);
    }
  }
  const routePorts: number[] = [];
  while (routePorts.length < size) {
    const p = await ephemeralPort(base.host);
    if (!ports.includes(p) && !routePorts.includes(p)) routePorts.push(p);
  }
  const cluster: ClusterInfo = { name: `cotal_${base.space}`, nodes: ports.map((port, i) => ({ port, routePort: routePorts[i]! })), routeAuth: true };
  writeSecret(root.routeSecretFile, randomBytes(24).toString("base64url"));
  const server = ports.map((p) => `nats://${connectHost(base.host)}:${p}`).join(",");
  const info: MeshInfo = { ...base, server, port: ports[0]!, cluster };
  // Written before the nodes start: a failed start is then stopped by `cotal down`, which reads it.
  root.writeInfo(info);
  return { info, state: "started", ...(await startNodes(root, info, auth, req.creds)), fresh: true };
}

/** Start every node of the cluster `info` describes, one after another. */
async function startNodes(
  root: MeshRoot,
  info: MeshInfo,
  auth: StaticAuth | undefined,
  creds: string | undefined,
): Promise<Pick<ServersUp, "record" | "nodes">> {
  const up: NodeUp[] = [];
  const records: ProcessRecord[] = [];
  for (const n of meshNodes(root, info)) {
    const rec = await startClusterNode(root, info, n, auth, creds);
    records.push(rec);
    up.push({ name: n.name, state: "started", pid: rec.pid, port: info.cluster!.nodes[n.index - 1]!.port, log: n.log });
  }
  return { record: records[0]!, nodes: up };
}

/**
 * How long a new cluster may refuse the space's R3 streams before it is formed again, and how
 * often. nats-server 2.10 now and then bootstraps a new cluster's meta group without one of its
 * nodes (cluster_size 2 of 3, the node a follower of a leader that never added it: seen about one
 * `cotal up --cluster 3` in eight, on an idle host too), and then no R3 stream is ever placed.
 * Nothing is stored yet, so the nodes are stopped, their stores emptied and started again.
 */
const FRESH_STALL_MS = 20_000;
const FORM_ATTEMPTS = 3;

/** Stop a new cluster's nodes, empty their stores and start them again on the same ports. */
async function reformCluster(
  root: MeshRoot,
  info: MeshInfo,
  auth: StaticAuth | undefined,
  creds: string | undefined,
): Promise<Pick<ServersUp, "record" | "nodes">> {
  for (const n of meshNodes(root, info)) {
    const read = readRecordFile(n.pidFile);
    if (read.kind === "ok") await stopProcess(read.record);
    removeRecord(n.pidFile);
    rmSync(n.storeDir, { recursive: true, force: true });
  }
  return startNodes(root, info, auth, creds);
}

/**
 * The account leaf hosts are bridged into: the space's clients account (static; the `leaf`
 * credential lives there), or the global account of an open mesh.
 */
function leafAccount(auth: StaticAuth | undefined, space: string): string {
  return auth ? auth.store.accountKey(clientsAccount(space)).getPublicKey() : "$G";
}

/** The cluster's route password; a missing or empty file is an error that says how to recover. */
function readRouteSecret(root: MeshRoot): string {
  let secret = "";
  try {
    secret = readSecret(root.routeSecretFile).toString("utf8").trim(); // refused if others could read it
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
  if (!/^[A-Za-z0-9_-]{16,}$/.test(secret)) {
    throw new CommandFailedError(`${root.routeSecretFile} is missing or not a route password: the cluster's nodes cannot authenticate their routes.`, {
      remedy: "Run `cotal down`, remove the mesh's cluster store (or move it aside), and `cotal up --cluster N` again to create the cluster with a new secret.",
    });
  }
  return secret;
}

/** Start node `n` of the cluster `info` describes, on its recorded ports. */
async function startClusterNode(root: MeshRoot, info: MeshInfo, n: NodeFiles, auth: StaticAuth | undefined, creds: string | undefined): Promise<ProcessRecord> {
  const cluster = info.cluster!;
  const me = cluster.nodes[n.index - 1]!;
  const routeSecret = cluster.routeAuth ? readRouteSecret(root) : undefined;
  const login = routeSecret ? `${ROUTE_USER}:${routeSecret}@` : "";
  const routes = cluster.nodes.map((node) => `nats-route://${login}${connectHost(info.host)}:${node.routePort}`);
  const started = await startNode(
    root,
    n,
    {
      host: info.host,
      port: me.port,
      space: info.space,
      sync: info.sync ?? DEFAULT_SYNC,
      // Each node keeps its own resolver folder: the full resolver writes account JWTs there.
      auth: auth ? await auth.store.serverConfig(n.resolverDir) : undefined,
      cluster: { name: cluster.name, host: info.host, port: me.routePort, routes, routeSecret },
      leaf: info.leaf ? { listener: info.leaf, port: info.leaf.port + n.index - 1, account: leafAccount(auth, info.space) } : undefined,
    },
    creds,
  );
  return started.record;
}

/** Start one server on its own store (claimed for the server's whole life) and record its pid. */
async function startNode(
  root: MeshRoot,
  n: NodeFiles,
  c: Omit<ServerConfig, "storeDir" | "portsDir" | "serverName">,
  creds: string | undefined,
): Promise<Awaited<ReturnType<typeof startNatsServer>>> {
  mkdirSync(n.storeDir, { recursive: true, mode: 0o700 });
  const claim = claimStore(n.storeDir, root.dir);
  let started: Awaited<ReturnType<typeof startNatsServer>>;
  try {
    started = await startNatsServer(
      root,
      { ...c, storeDir: n.storeDir, portsDir: root.runDir, serverName: n.serverName },
      {
        creds,
        onSpawn: (rec) => {
          claim.handTo(rec);
          noteStarted(rec, n.pidFile); // an interrupted `cotal up` stops it again
        },
        configFile: n.config,
        log: n.name,
      },
    );
  } catch (err) {
    claim.release();
    throw err;
  }
  writeRecord(n.pidFile, started.record);
  return started;
}

/**
 * How long `up` waits for a new cluster to take the space's streams. Nodes that started together
 * elect a meta leader in seconds, but on a loaded host a peer can stay behind for tens of seconds,
 * and until every peer is current an R3 stream is refused ("no suitable peers for placement"):
 * seen past 30 s under load (test/cluster/up-cluster.e2e).
 */
const CLUSTER_PROVISION_MS = 120_000;

/** JetStream's API error for a stream whose limits do not fit the account's or the server's storage. */
const JS_INSUFFICIENT_RESOURCES = 10047;

/**
 * Create or reconcile the space's streams. On a cluster JetStream answers only once the nodes
 * have elected a meta leader, and an R3 stream needs three current peers: until then the
 * attempt is repeated (a stream conflict is final at once).
 */
async function provisionSpace(
  addr: { server: string; creds?: string | undefined },
  info: MeshInfo,
  replicas: number,
  waitMs = CLUSTER_PROVISION_MS,
): Promise<ProvisionReport> {
  const deadline = Date.now() + (info.cluster ? waitMs : 0);
  for (;;) {
    const nc = await connectMesh({ ...addr, name: "cotal-up" });
    try {
      return await ensureSpace(nc, info.space, { replicas, ...(info.limits ? { limits: info.limits } : {}) });
    } catch (err) {
      if (err instanceof StreamConflictError) throw err;
      if (err instanceof JetStreamApiError && err.code === JS_INSUFFICIENT_RESOURCES) {
        throw new CommandFailedError(
          `The space's streams do not fit the JetStream storage this mesh may use: ${err.message} (JetStream error ${err.code}; it sets aside each stream's byte limit when it creates the stream).`,
          {
            cause: err,
            remedy:
              "Give the space more storage (--max-disk, static mode; default 4GiB) or its streams less (--chat-bytes, --artifact-bytes, --dm-bytes, --task-bytes, --seat-log-bytes, --events-bytes), or free disk space.",
          },
        );
      }
      if (Date.now() >= deadline) {
        if (!info.cluster) throw err;
        throw new CommandFailedError(
          `The cluster's nodes are running, but JetStream did not take the space's streams at R${replicas} within ${waitMs / 1000} s: ${(err as Error).message}.`,
          {
            cause: err,
            remedy: "Run `cotal up` again (the nodes keep running and catch up); if it fails again, `cotal logs nats-server` shows which node stays behind.",
          },
        );
      }
    } finally {
      await nc.close().catch(() => undefined);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

/**
 * The space account's JetStream storage. JetStream counts every replica against the account, so
 * on a cluster at R3 the account is given three times what one copy of the space may hold
 * (`--max-disk`/`--max-memory`, else the defaults): the same space fits on a cluster as on one
 * node (docs/scaling.md).
 */
function accountLimits(req: UpRequest, prev: MeshInfo | undefined): Partial<AccountStorageLimits> | undefined {
  const size = req.cluster ?? prev?.cluster?.nodes.length ?? 1;
  if (size < 3) return req.account;
  return {
    ...req.account,
    diskBytes: (req.account?.diskBytes ?? DEFAULT_ACCOUNT_STORAGE.diskBytes) * 3,
    memoryBytes: (req.account?.memoryBytes ?? DEFAULT_ACCOUNT_STORAGE.memoryBytes) * 3,
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
  if (req.sync !== undefined && req.sync !== (prev.sync ?? DEFAULT_SYNC)) diffs.push(`--sync ${req.sync} (it syncs ${describeSync(prev.sync)})`);
  if (req.storeDir !== undefined && req.storeDir !== prev.storeDir) diffs.push(`--store-dir ${req.storeDir} (it stores in ${prev.storeDir})`);
  if (req.limits && JSON.stringify({ ...prev.limits, ...req.limits }) !== JSON.stringify(prev.limits ?? {}))
    diffs.push(`storage limits ${JSON.stringify(req.limits)} (it runs with ${JSON.stringify(prev.limits ?? "the defaults")})`);
  const size = prev.cluster?.nodes.length ?? 1;
  if (req.cluster !== undefined && req.cluster !== size)
    diffs.push(`--cluster ${req.cluster} (it runs ${size === 1 ? "a single server" : `a cluster of ${size}`})`);
  if (req.leaf && JSON.stringify(req.leaf) !== JSON.stringify(prev.leaf))
    diffs.push(`leaf listener ${req.leaf.host}:${req.leaf.port} (it has ${prev.leaf ? `${prev.leaf.host}:${prev.leaf.port}` : "none"})`);
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
  /** `cotal up --cluster N`: each node, in order. */
  nodes?: Array<{ pid?: number; result: "stopped" | "killed" | "not-running" | "not-recorded" }>;
  /** A dashboard `cotal web --detach` started here: it would only show the mesh as stale once it is gone. */
  web: { pid?: number; result: "stopped" | "killed" | "not-running" | "not-recorded" };
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
    const web = await stop(root.pidFile("web"), [], 5_000);
    const manager = await stopManager(root);
    const meshService = await stop(root.pidFile("mesh-service"), findMeshServices(root), 10_000);
    const nodes = info?.cluster ? meshNodes(root, info) : [];
    const stores = [...new Set([info?.storeDir, root.defaultStoreDir, ...nodes.map((n) => n.storeDir)].filter((d): d is string => !!d))];
    const servers = [
      ...stores
        .map(storeLockHolder)
        .filter((h): h is StoreLockRecord => !!h && h.meshRoot === root.dir && isNatsServerCommand(h.command))
        .map((h) => ProcessRecord.parse(h)),
      ...findNatsServers(root),
    ];
    // A cluster's nodes are stopped together: one by one, the last would wait for a quorum that is gone.
    const nodeReports = await Promise.all(nodes.map((n) => stop(n.pidFile, [], 15_000)));
    const stopped = new Set(nodeReports.map((r) => r.pid));
    const single = await stop(
      root.pidFile("nats-server"),
      uniqueProcesses(servers).filter((p) => !stopped.has(p.pid)),
      15_000,
    );
    const natsServer = single.result === "not-recorded" && nodeReports[0] ? nodeReports[0] : single;
    for (const store of stores) releaseStaleStore(store);
    return { root: root.dir, manager, meshService, natsServer, ...(nodes.length ? { nodes: nodeReports } : {}), web };
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

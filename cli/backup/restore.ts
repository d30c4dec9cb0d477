// `cotal restore <dir>`: a backup made by `cotal backup`, verified against its manifest, put back
// onto this project's mesh: the space's identity (static meshes), then every stream through
// JetStream's restore API, consumers and their delivery state included (docs/backup.md).
import { createReadStream, readFileSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import type { JetStreamManager, StreamInfo } from "@nats-io/jetstream";
import { z } from "zod";
import {
  adoptSpaceIdentity,
  clusterReplicas,
  readSecret,
  restoreStream,
  SNAPSHOT_CHUNK_BYTES,
  type AdoptedIdentity,
  type StreamSnapshotMeta,
} from "../../broker/index.js";
import { CotalError, names, withArticle } from "../../schemas/index.js";
import { BACKUP_LAYOUT, MANIFEST_FILE, readVerifiedBackup, type BackupManifest } from "./backup-manifest.js";
import { listSpaceStreams, withDataAccount } from "./data-connection.js";
import { CommandFailedError, UsageError } from "../terminal/errors.js";
import { hostManagerInstance } from "./backup.js";
import { managerInstance, managerStateDir, stopManager } from "../mesh-host/manager-process.js";
import { bringDown, bringUp } from "../mesh-host/mesh-lifecycle.js";
import type { MeshInfo, MeshRoot } from "../mesh-host/mesh-root.js";
import { readRecordFile, removeRecord, stopProcess, type ProcessRecord } from "../mesh-host/pid-file.js";
import { readPerson } from "../identity/person.js";
import { progressBar } from "../terminal/progress.js";
import { findMeshServices } from "../mesh-host/service-process.js";

/** A stream of the mesh holding data a restore would replace. */
export interface HeldData {
  stream: string;
  messages: number;
}

/** What `cotal restore` did. */
export interface RestoreReport {
  dir: string;
  space: string;
  mode: MeshInfo["mode"];
  /** The backup: when it was taken, by which Cotal, from which nats-server. */
  backup: { createdAt: string; cotalVersion: string; natsServerVersion: string };
  natsServerVersion: string;
  streams: Array<{ name: string; messages: number; consumers: number }>;
  /** Static meshes: the identity adopted (where the replaced auth store went). */
  identity?: AdoptedIdentity;
  /** What the mesh held before (`--force`): replaced by the backup. */
  replaced: HeldData[];
  notes: string[];
}

/** The stream configuration and state a backup keeps beside each snapshot. */
const SnapshotMeta = z.object({
  config: z.looseObject({ name: z.string() }),
  state: z.looseObject({ messages: z.number() }),
});

/**
 * Restore the backup in `dir` onto the running mesh at `root`. Refused before anything changes
 * when the backup fails its manifest (a file missing, resized or with another sha256), is of
 * another space or mode, or when the mesh holds data and `force` is not set.
 *
 * A static mesh adopts the backup's identity: the mesh is stopped, its auth store moved aside for
 * the backup's (adoptSpaceIdentity), and started again, so it trusts what the backed-up mesh
 * signed. Then the mesh host's manager and mesh service are stopped, the space's streams deleted
 * and each restored from its snapshot, and `cotal up` starts them again (provisioning reconciles
 * the restored streams with this mesh's limits).
 */
export async function restoreBackup(root: MeshRoot, info: MeshInfo, target: string, opts: { force: boolean; progress: boolean }): Promise<RestoreReport> {
  const dir = resolve(target);
  const manifest = await verify(dir, opts.progress);
  if (manifest.space !== info.space) {
    throw new UsageError(
      `The backup in ${dir} is of space ${manifest.space}; the mesh here serves ${info.space}. A space's streams and subjects carry its name.`,
      {
        remedy: `Restore it onto a mesh of that space: \`cotal up --space ${manifest.space}\` in a new folder, then \`cotal restore ${dir}\` there.`,
      },
    );
  }
  if (manifest.mode !== info.mode) {
    throw new UsageError(`The backup in ${dir} is of ${withArticle(manifest.mode)} mesh; the mesh here is ${info.mode}.`, {
      remedy: `Restore it onto ${withArticle(manifest.mode)} mesh (\`cotal up${manifest.mode === "open" ? " --open" : ""}\` in a new folder).`,
    });
  }
  const held = await withDataAccount(root, info, (_nc, jsm) => dataHeld(jsm, root, info));
  if (held.length && !opts.force) {
    throw new UsageError(
      `The mesh in ${root.dir} already holds data (${held.map((h) => `${h.stream}: ${h.messages} message${h.messages === 1 ? "" : "s"}`).join(", ")}); a restore would replace it.`,
      { remedy: "Restore onto a new mesh (`cotal up` in an empty folder), or pass --force to replace what this one holds." },
    );
  }
  const notes: string[] = [];
  let identity: AdoptedIdentity | undefined;
  const own = hostManagerInstance(root, info.space);
  const seatRecords = manifest.streams.find((s) => s.name === names.seatsStream(info.space))?.messages ?? 0;
  if (manifest.managerInstance && manifest.managerInstance !== own && seatRecords > 0) {
    notes.push(
      `this host's manager now runs as ${manifest.managerInstance}, the backed-up host's manager${manifest.host ? ` (on ${manifest.host})` : ""}, so \`cotal ps --all\` lists its seat records; a seat that was running there is not started here (its folder stayed behind): it is retired, naming its missing folder`,
    );
  }
  if (info.mode === "static") {
    await bringDown(root);
    const files = (manifest.identity ?? []).map((path) => ({ path, bytes: readSecret(join(dir, BACKUP_LAYOUT.identity(path))) }));
    try {
      identity = await adoptSpaceIdentity(root.authDir, info.space, files);
    } catch (err) {
      // Nothing was changed (the identity is checked before it replaces anything): the mesh comes back as it was.
      await bringUp(root, { mode: info.mode }).catch(() => undefined);
      throw err;
    }
    // The resolver keeps account JWTs the server was sent; the restarted server takes the adopted ones.
    rmSync(root.resolverDir, { recursive: true, force: true });
    if (identity.replaced) notes.push(`the mesh's previous auth store is kept in ${identity.replaced}`);
    await bringUp(root, { mode: info.mode });
  }
  await stopMeshProcesses(root);
  adoptManagerInstance(root, info.space, manifest.managerInstance);
  const restored = await withDataAccount(root, info, async (nc, jsm) => {
    for (const si of await listSpaceStreams(jsm, info)) await jsm.streams.delete(si.config.name);
    const total = manifest.streams.reduce((n, s) => n + fileBytes(manifest, BACKUP_LAYOUT.snapshot(s.name)), 0);
    const bar = progressBar("restoring", total, opts.progress);
    let done = 0;
    const out: RestoreReport["streams"] = [];
    try {
      for (const s of manifest.streams) {
        const meta = snapshotMeta(dir, s.name);
        meta.config.num_replicas = clusterReplicas(nc);
        let got: StreamInfo;
        try {
          got = await restoreStream(nc, meta, createReadStream(join(dir, BACKUP_LAYOUT.snapshot(s.name)), { highWaterMark: SNAPSHOT_CHUNK_BYTES }), {
            onChunk: (bytes) => bar.update((done += bytes)),
          });
        } catch (err) {
          // The cause is said here, whatever its kind: the remedy depends on it.
          const why = err instanceof CotalError ? (err.remedy ? err.message.replace(` ${err.remedy}`, "") : err.message) : (err as Error).message;
          throw new CommandFailedError(
            `The restore stopped at stream ${s.name}: ${why.replace(/\.$/, "")}. The mesh holds only part of the backup, and its manager and mesh service are stopped.`,
            {
              remedy: `${err instanceof CotalError && err.remedy ? err.remedy.replace(/\.$/, "") : "Fix that (`cotal logs nats-server` shows the server's side)"}; \`cotal restore ${dir} --force\` starts over.`,
              cause: err,
            },
          );
        }
        out.push({ name: s.name, messages: got.state.messages, consumers: got.state.consumer_count });
      }
    } finally {
      bar.stop();
    }
    return { streams: out, version: nc.info?.version ?? "unknown" };
  });
  if (restored.version !== manifest.natsServerVersion)
    notes.push(`the backup was taken from nats-server ${manifest.natsServerVersion}; this mesh runs ${restored.version}`);
  // The credential the interim start minted for the host's manager is in no restored identity record:
  // its seed goes, and `up` mints one the restored registry knows.
  rmSync(join(managerStateDir({ root, space: info.space }), "manager.creds"), { force: true });
  // So is the person's (`up` mints it again, with their DM inbox, as it does on a new mesh).
  const person = readPerson(root);
  if (person && info.mode === "static") rmSync(root.mintedCredsFile(person.name), { force: true });
  const up = await bringUp(root, { mode: info.mode });
  notes.push(...up.notes);
  return {
    dir,
    space: info.space,
    mode: info.mode,
    backup: { createdAt: manifest.createdAt, cotalVersion: manifest.cotalVersion, natsServerVersion: manifest.natsServerVersion },
    natsServerVersion: restored.version,
    streams: restored.streams,
    ...(identity ? { identity } : {}),
    replaced: held,
    notes,
  };
}

/**
 * The mesh host's manager takes the backed-up host manager's instance id (while it is stopped), so
 * the restored seat log's records of that host's seats are its own again: `cotal ps --all` lists
 * them. It adopts none of their processes: a manager adopts only a process launched from its own
 * state dir (docs/manager.md), so the backed-up mesh's seats, still running beside it on the same
 * host, stay that mesh's, and a record whose folder is not here is retired naming it.
 */
function adoptManagerInstance(root: MeshRoot, space: string, instance: string | undefined): void {
  if (instance) managerInstance(managerStateDir({ root, space }), instance);
}

/** Verify the backup against its manifest, with a progress bar over the bytes hashed. */
async function verify(dir: string, progress: boolean): Promise<BackupManifest> {
  let total = 0;
  try {
    const m = JSON.parse(readFileSync(join(dir, MANIFEST_FILE), "utf8")) as { files?: Array<{ bytes?: number }> };
    total = (m.files ?? []).reduce((n, f) => n + (typeof f.bytes === "number" ? f.bytes : 0), 0);
  } catch {
    // readVerifiedBackup says what is wrong with it
  }
  const bar = progressBar("verifying", total, progress && total > 0);
  let done = 0;
  try {
    return await readVerifiedBackup(dir, (bytes) => bar.update((done += bytes)));
  } finally {
    bar.stop();
  }
}

function fileBytes(m: BackupManifest, path: string): number {
  return m.files.find((f) => f.path === path)?.bytes ?? 0;
}

/** The configuration and state kept beside a stream's snapshot (verified by the manifest already). */
function snapshotMeta(dir: string, stream: string): StreamSnapshotMeta {
  const path = join(dir, BACKUP_LAYOUT.meta(stream));
  const parsed = SnapshotMeta.safeParse(JSON.parse(readFileSync(path, "utf8")));
  if (!parsed.success || parsed.data.config.name !== stream) {
    throw new CommandFailedError(`${path} does not describe stream ${stream}; nothing of it was restored.`, { remedy: "Restore from an intact backup." });
  }
  return parsed.data as unknown as StreamSnapshotMeta;
}

/**
 * What the mesh holds that a restore would replace: messages in any of the space's streams, but
 * not what a fresh `cotal up` writes by itself (presence and manager heartbeats, which expire in
 * seconds, and the identity record of this host's own manager).
 */
async function dataHeld(jsm: JetStreamManager, root: MeshRoot, info: MeshInfo): Promise<HeldData[]> {
  const liveness = new Set([`KV_${names.presenceBucket(info.space)}`, `KV_${names.managersBucket(info.space)}`]);
  const members = `KV_${names.membersBucket(info.space)}`;
  const instance = hostManagerInstance(root, info.space);
  // What `cotal up` itself records: the host manager's identity, and the person's identity and DM inbox.
  const bucket = `$KV.${names.membersBucket(info.space)}`;
  const person = readPerson(root);
  const own = new Set([
    ...(instance ? [`${bucket}.id.local.${instance}`] : []),
    ...(person && person.space === info.space ? [`${bucket}.id.local.${person.name}`, `${bucket}.dm.local.${person.name}`] : []),
  ]);
  const held: HeldData[] = [];
  for (const si of await listSpaceStreams(jsm, info)) {
    const name = si.config.name;
    if (liveness.has(name) || si.state.messages === 0) continue;
    let messages = si.state.messages;
    if (name === members) {
      const subjects = (await jsm.streams.info(name, { subjects_filter: ">" })).state.subjects ?? {};
      messages = Object.entries(subjects).reduce((n, [subject, count]) => (own.has(subject) ? n : n + count), 0);
    }
    if (messages > 0) held.push({ stream: name, messages });
  }
  return held;
}

/**
 * Stop the mesh host's manager and the mesh service, leaving nats-server running: the streams they
 * hold open are about to be deleted and restored. `cotal up` starts them again.
 */
async function stopMeshProcesses(root: MeshRoot): Promise<void> {
  await stopManager(root);
  const file = root.pidFile("mesh-service");
  const read = readRecordFile(file);
  const seen = new Set<string>();
  const all: ProcessRecord[] = [...(read.kind === "ok" ? [read.record] : []), ...findMeshServices(root)];
  for (const rec of all) {
    const key = `${rec.pid}/${rec.startTime}`;
    if (seen.has(key)) continue;
    seen.add(key);
    await stopProcess(rec, 10_000);
  }
  removeRecord(file);
}

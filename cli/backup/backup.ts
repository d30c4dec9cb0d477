// `cotal backup <dir>`: every stream, bucket and object store of the space through JetStream's
// snapshot API (consumers and their delivery state included), the space's identity on a static
// mesh, and a manifest with each file's size and sha256 (docs/backup.md).
import { createHash } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync } from "node:fs";
import { open } from "node:fs/promises";
import { hostname } from "node:os";
import { dirname, join, resolve } from "node:path";
import { AuthStore, readSpaceIdentity, snapshotStream, writeSecret } from "../../broker/index.js";
import { COTAL_VERSION } from "../../schemas/index.js";
import { BACKUP_LAYOUT, BackupManifest, MANIFEST_FILE, type BackupStream } from "./backup-manifest.js";
import { listSpaceStreams, withDataAccount } from "./data-connection.js";
import { UsageError } from "../terminal/errors.js";
import { managerStateDir } from "../mesh-host/manager-process.js";
import type { MeshInfo, MeshRoot } from "../mesh-host/mesh-root.js";
import { progressBar } from "../terminal/progress.js";

/** What `cotal backup` wrote. */
export interface BackupReport {
  dir: string;
  space: string;
  mode: MeshInfo["mode"];
  createdAt: string;
  cotalVersion: string;
  natsServerVersion: string;
  streams: BackupStream[];
  /** Identity files written (0 on an open mesh, which has none). */
  identityFiles: number;
  /** Files and bytes in the folder, the manifest not counted. */
  files: number;
  bytes: number;
}

type ManifestFile = BackupManifest["files"][number];

/**
 * Back the space of the mesh at `root` up into `dir`, a new or empty folder (made 0700: it holds
 * the space's keys). Each stream is a consistent snapshot of itself; streams are taken one after
 * another while the mesh keeps running. The manifest is written last, so a folder without one is
 * an unfinished backup, which restore refuses.
 */
export async function takeBackup(root: MeshRoot, info: MeshInfo, target: string, opts: { progress: boolean }): Promise<BackupReport> {
  const dir = resolve(target);
  prepareFolder(dir);
  const files: ManifestFile[] = [];
  const createdAt = new Date().toISOString();
  const { natsServerVersion, streams } = await withDataAccount(root, info, async (nc, jsm) => {
    const list = await listSpaceStreams(jsm, info);
    const total = list.reduce((n, si) => n + si.state.bytes, 0);
    const bar = progressBar("backing up", total, opts.progress);
    let done = 0;
    const streams: BackupStream[] = [];
    try {
      for (const si of list) {
        const name = si.config.name;
        const out = await newFile(dir, BACKUP_LAYOUT.snapshot(name));
        let written = 0;
        let meta;
        try {
          meta = await snapshotStream(nc, name, async (chunk) => {
            await out.write(chunk);
            written += chunk.length;
            bar.update(done + Math.min(written, si.state.bytes));
          });
        } finally {
          files.push(await out.close());
        }
        files.push(writeFile(dir, BACKUP_LAYOUT.meta(name), JSON.stringify(meta)));
        streams.push({ name, messages: meta.state.messages, bytes: meta.state.bytes, consumers: meta.state.consumer_count });
        done += si.state.bytes;
        bar.update(done);
      }
    } finally {
      bar.stop();
    }
    return { natsServerVersion: nc.info?.version ?? "unknown", streams };
  });
  const identity: string[] = [];
  if (info.mode === "static") {
    const store = AuthStore.existing(root.authDir)!;
    for (const f of readSpaceIdentity(store, info.space)) {
      files.push(writeFile(dir, BACKUP_LAYOUT.identity(f.path), f.bytes));
      identity.push(f.path);
    }
  }
  const instance = hostManagerInstance(root, info.space);
  const manifest = BackupManifest.parse({
    format: "cotal-backup",
    formatVersion: 1,
    cotalVersion: COTAL_VERSION,
    natsServerVersion,
    space: info.space,
    mode: info.mode,
    createdAt,
    streams,
    host: hostname(),
    ...(instance ? { managerInstance: instance } : {}),
    ...(info.mode === "static" ? { identity } : {}),
    files,
  });
  writeSecret(join(dir, MANIFEST_FILE), JSON.stringify(manifest, null, 2) + "\n");
  return {
    dir,
    space: info.space,
    mode: info.mode,
    createdAt,
    cotalVersion: COTAL_VERSION,
    natsServerVersion,
    streams,
    identityFiles: identity.length,
    files: files.length,
    bytes: files.reduce((n, f) => n + f.bytes, 0),
  };
}

/** The instance id of the mesh host's manager, when it ever ran (`.cotal/manager/instance`). */
export function hostManagerInstance(root: MeshRoot, space: string): string | undefined {
  const file = join(managerStateDir({ root, space }), "instance");
  return existsSync(file) ? readFileSync(file, "utf8").trim() : undefined;
}

/** A new or empty folder for the backup, 0700; a folder holding anything is refused (nothing is overwritten). */
function prepareFolder(dir: string): void {
  if (existsSync(dir)) {
    if (!statSync(dir).isDirectory()) throw new UsageError(`${dir} is a file, not a folder.`, { remedy: "Name a new or empty folder for the backup." });
    if (readdirSync(dir).length) {
      throw new UsageError(`${dir} is not empty; a backup is written only into a new or empty folder, so nothing is overwritten.`, {
        remedy: "Name a new folder (e.g. with the date in its name), or empty this one.",
      });
    }
  } else {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  }
  chmodSync(dir, 0o700);
}

/** Write a whole file (0600, atomically) and describe it for the manifest. */
function writeFile(dir: string, path: string, data: string | Uint8Array): ManifestFile {
  const bytes = typeof data === "string" ? Buffer.from(data, "utf8") : data;
  writeSecret(join(dir, path), bytes);
  return { path, bytes: bytes.length, sha256: `sha256:${createHash("sha256").update(bytes).digest("hex")}` };
}

/** A file written in pieces (0600, created exclusively), hashed as it is written. */
async function newFile(dir: string, path: string): Promise<{ write(chunk: Uint8Array): Promise<void>; close(): Promise<ManifestFile> }> {
  mkdirSync(dirname(join(dir, path)), { recursive: true, mode: 0o700 });
  const fh = await open(join(dir, path), "wx", 0o600);
  const hash = createHash("sha256");
  let bytes = 0;
  return {
    async write(chunk) {
      for (let off = 0; off < chunk.length;) off += (await fh.write(chunk, off)).bytesWritten;
      hash.update(chunk);
      bytes += chunk.length;
    },
    async close() {
      await fh.sync();
      await fh.close();
      return { path, bytes, sha256: `sha256:${hash.digest("hex")}` };
    },
  };
}

// `cotal doctor`: the disk under the JetStream store has room for what the space's streams may
// hold (their max bytes, mesh.json's limits over the defaults): a full disk stops the server
// acknowledging any write, long before a stream reaches its own limit.
import { lstatSync, readdirSync, statfsSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { AuthStore, STORAGE_DEFAULTS } from "../../broker/index.js";
import { meshNodes } from "../mesh-host/cluster-nodes.js";
import type { MeshInfo, MeshRoot } from "../mesh-host/mesh-root.js";
import { failed, pass, skipped, type DoctorCheck } from "./check.js";

const ID = "disk";
const TITLE = "disk space";

/** The stores a space fills, and the flag that bounds each (`cotal up`). */
const BOUNDED = [
  ["chatBytes", "--chat-bytes"],
  ["dmBytes", "--dm-bytes"],
  ["taskBytes", "--task-bytes"],
  ["seatsBytes", "--seat-log-bytes"],
  ["eventsBytes", "--events-bytes"],
  ["artifactsBytes", "--artifact-bytes"],
] as const;

/**
 * Pass when the free space plus what the stores hold already covers what the space may store
 * (every replica on this host counted; a static mesh's account cap bounds it), else fail naming
 * how much is missing.
 */
export function diskCheck(root: MeshRoot | undefined, info: MeshInfo | undefined, remote = false): DoctorCheck {
  if (remote) return skipped(ID, TITLE, "the mesh was named by --server/COTAL_SERVER: its store is on its host, checked there.");
  if (!root || !info) return skipped(ID, TITLE, "no mesh here yet (no .cotal/mesh.json at or above this folder): nothing is stored on this host.");
  const limits = { ...STORAGE_DEFAULTS, ...info.limits };
  const nodes = meshNodes(root, info);
  // A local cluster of three or more keeps every stream at R3 (broker clusterReplicas): each copy is on this disk.
  const copies = nodes.length >= 3 ? 3 : 1;
  const streams = BOUNDED.reduce((n, [key]) => n + limits[key], 0) * copies;
  const cap = info.mode === "static" ? accountDiskCap(root, info.space) : undefined;
  const need = cap !== undefined ? Math.min(streams, cap) : streams;
  const stored = nodes.reduce((n, node) => n + treeBytes(node.storeDir), 0);
  const at = existingDir(nodes[0]!.storeDir);
  const fs = statfsSync(at);
  const free = fs.bavail * fs.bsize;
  const head = `${bytes(free)} free at ${at}, ${bytes(stored)} stored; space ${info.space} may store ${bytes(need)}${copies > 1 ? ` (${copies} replicas)` : ""}${cap !== undefined && cap < streams ? " (its account's cap, --max-disk)" : ""}`;
  if (free + stored >= need) return pass(ID, TITLE, `${head}.`);
  return failed(
    ID,
    TITLE,
    `${head}: ${bytes(need - stored - free)} short. When the disk fills, the server stops acknowledging writes: sends fail before any stream is full.`,
    `Free disk space there, or lower the limits (\`cotal down\`, then \`cotal up -d\` with smaller ${BOUNDED.map(([, flag]) => flag).join(", ")}${info.mode === "static" ? " or --max-disk" : ""}), or move the store (--store-dir).`,
  );
}

/** A static mesh's data-account disk limit (`--max-disk`); undefined when it cannot be read. */
function accountDiskCap(root: MeshRoot, space: string): number | undefined {
  try {
    return AuthStore.existing(root.authDir)?.storageLimits(space).diskBytes;
  } catch {
    return undefined; // an unreadable limits file is the modes check's business
  }
}

/** The bytes under a folder (0 when it does not exist yet). */
function treeBytes(dir: string): number {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return 0;
  }
  let n = 0;
  for (const e of entries) {
    const p = join(dir, e.name);
    if (e.isDirectory()) n += treeBytes(p);
    else if (e.isFile()) n += lstatSync(p).size;
  }
  return n;
}

/** The folder itself, or its nearest existing parent (a store not created yet lands on that disk). */
function existingDir(dir: string): string {
  for (let d = dir; ; d = dirname(d)) {
    try {
      if (statSync(d).isDirectory()) return d;
    } catch {
      /* not there yet */
    }
    if (dirname(d) === d) return d;
  }
}

function bytes(n: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
  let v = Math.max(0, n);
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${i === 0 ? v : v.toFixed(1)} ${units[i]}`;
}

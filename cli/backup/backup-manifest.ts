// The manifest of a `cotal backup` folder and its verification: what the backup holds, and the
// size and sha256 of every file in it, checked before a restore touches anything.
import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { sha256File } from "../../runtime/index.js";
import { CotalError, describeIssues, ManagerInstance, SpaceName } from "../../schemas/index.js";
import { MeshMode } from "../mesh-host/mode.js";

/** The manifest's file name, inside the backup folder; written last, so a backup without it did not finish. */
export const MANIFEST_FILE = "manifest.json";

/** Where each part lives inside a backup folder. */
export const BACKUP_LAYOUT = {
  /** The packed store JetStream's snapshot API sent, byte for byte. */
  snapshot: (stream: string) => `streams/${stream}.snapshot`,
  /** The stream's configuration and state from the same snapshot (what a restore request carries). */
  meta: (stream: string) => `streams/${stream}.json`,
  /** A file of the space's identity, at its path inside the auth store. */
  identity: (path: string) => `identity/${path}`,
} as const;

/** A path inside the backup folder: relative, `/`-separated, no `.` or `..` segment. */
const BackupPath = z
  .string()
  .regex(/^[A-Za-z0-9_.-]+(\/[A-Za-z0-9_.-]+)*$/, "must be a relative path of letters, digits, '_', '-' and '.'")
  .refine((p) => !p.split("/").some((s) => s === "." || s === ".."), "must not contain '.' or '..' segments");

const Count = z.number().int().nonnegative();

/** One stream of the backup (a stream, a bucket's `KV_…` or an object store's `OBJ_…`). */
export const BackupStream = z.object({
  name: z.string().regex(/^[A-Za-z0-9_-]+$/, "is not a stream name"),
  /** Messages and bytes it held, and its consumers, when the snapshot was taken. */
  messages: Count,
  bytes: Count,
  consumers: Count,
});
export type BackupStream = z.infer<typeof BackupStream>;

/** `manifest.json` of a backup folder. Unknown fields are ignored; `formatVersion` changes when the layout does. */
export const BackupManifest = z.object({
  format: z.literal("cotal-backup"),
  formatVersion: z.literal(1),
  /** The Cotal that wrote it, and the nats-server it read the snapshots from. */
  cotalVersion: z.string().min(1),
  natsServerVersion: z.string().min(1),
  space: SpaceName,
  mode: MeshMode,
  createdAt: z.iso.datetime({ offset: true }),
  streams: z.array(BackupStream),
  /** The host the backup was taken on (its hostname). */
  host: z.string().min(1).optional(),
  /** The instance id of the mesh host's manager: the seat log's records of that host's seats carry it. */
  managerInstance: ManagerInstance.optional(),
  /** Static meshes: the identity files, by their path inside the auth store (BACKUP_LAYOUT.identity). */
  identity: z.array(BackupPath).optional(),
  /** Every file of the backup but this manifest: size and `sha256:<hex>`. */
  files: z.array(z.object({ path: BackupPath, bytes: Count, sha256: z.string().regex(/^sha256:[0-9a-f]{64}$/) })),
});
export type BackupManifest = z.infer<typeof BackupManifest>;

/** A folder that is not a backup Cotal can restore, or whose manifest is broken. */
export class BackupInvalidError extends CotalError {
  constructor(dir: string, detail: string, cause?: unknown) {
    super("backup-invalid", `${dir} is not a backup Cotal can restore: ${detail}; nothing was changed.`, {
      remedy: "Name the folder `cotal backup` wrote (it holds manifest.json), or take the backup again.",
      cause,
    });
  }
}

/** A file of the backup differs from what its manifest says: changed, truncated, or missing. */
export class BackupTamperedError extends CotalError {
  constructor(
    readonly file: string,
    detail: string,
  ) {
    super("backup-tampered", `The backup file ${file} ${detail}: the backup was changed or damaged since it was written; nothing was restored.`, {
      remedy: "Restore from an intact copy of the backup (the manifest's sha256 of each file tells which copy is intact).",
    });
  }
}

/**
 * Read `<dir>/manifest.json` and check every file it lists (present, its size, its sha256) and
 * that everything the manifest names is among them. Throws BackupInvalidError or
 * BackupTamperedError (naming the file) before any restore step.
 */
export async function readVerifiedBackup(dir: string, onFile?: (bytes: number) => void): Promise<BackupManifest> {
  const file = join(dir, MANIFEST_FILE);
  if (!existsSync(file)) throw new BackupInvalidError(dir, `it has no ${MANIFEST_FILE} (a backup that did not finish has none)`);
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, "utf8"));
  } catch (cause) {
    throw new BackupInvalidError(dir, `${MANIFEST_FILE} is not JSON`, cause);
  }
  const parsed = BackupManifest.safeParse(raw);
  if (!parsed.success) throw new BackupInvalidError(dir, `${MANIFEST_FILE}: ${describeIssues(parsed.error).join("; ")}`);
  const m = parsed.data;
  const listed = new Set<string>();
  for (const f of m.files) {
    if (listed.has(f.path)) throw new BackupInvalidError(dir, `${MANIFEST_FILE} lists ${f.path} twice`);
    listed.add(f.path);
  }
  const named = [...m.streams.flatMap((s) => [BACKUP_LAYOUT.snapshot(s.name), BACKUP_LAYOUT.meta(s.name)]), ...(m.identity ?? []).map(BACKUP_LAYOUT.identity)];
  for (const p of named) if (!listed.has(p)) throw new BackupInvalidError(dir, `${MANIFEST_FILE} names ${p} but gives no size or sha256 for it`);
  for (const f of m.files) {
    const path = join(dir, f.path);
    if (!existsSync(path) || !statSync(path).isFile()) throw new BackupTamperedError(f.path, "is missing");
    const size = statSync(path).size;
    if (size !== f.bytes) throw new BackupTamperedError(f.path, `is ${size} bytes, the manifest says ${f.bytes}`);
    if ((await sha256File(path)) !== f.sha256) throw new BackupTamperedError(f.path, "does not match its sha256 in the manifest");
    onFile?.(f.bytes);
  }
  return m;
}

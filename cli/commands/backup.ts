import type { Command } from "commander";
import { z } from "zod";
import { takeBackup, type BackupReport } from "../backup/backup.js";
import { MeshNotFoundError } from "../terminal/errors.js";
import { findMeshRoot, type MeshInfo, type MeshRoot } from "../mesh-host/mesh-root.js";
import { printJson, printLines, table } from "../terminal/output.js";
import { restoreBackup, type RestoreReport } from "../backup/restore.js";
import { parseInput } from "../terminal/validate.js";

const BackupFlags = z.object({ dir: z.string().min(1, "<dir> must name a folder"), json: z.boolean().optional() });
const RestoreFlags = BackupFlags.extend({ force: z.boolean().optional() });

/** `cotal backup <dir>` and `cotal restore <dir>`: a space's whole state, copied out and put back (docs/backup.md). */
export function registerBackup(program: Command): void {
  program
    .command("backup <dir>")
    .summary("copy the space (every stream, bucket and object store, identities, seat log) into a folder")
    .description(
      "Write a backup of this project's space into <dir>, a new or empty folder (made 0700: on a static mesh it holds the space's keys). " +
        "Every stream, KV bucket and object store of the space is taken through JetStream's snapshot API, consumers and their delivery " +
        "state included (a DM not yet delivered stays pending); a static mesh's identity goes with it (operator, system and space accounts, " +
        "the signing key, the revocation list), so credentials it minted keep working after a restore and revoked ones stay revoked. " +
        "manifest.json, written last, lists every file with its size and sha256. Runs on the mesh host, beside its .cotal/ folder; " +
        "the mesh keeps running. A progress bar shows on a terminal.",
    )
    .option("--json", "print what was written as JSON")
    .action(async (dir: string, raw: Record<string, unknown>) => {
      const f = parseInput(BackupFlags, { ...raw, dir }, { dir: "<dir>" });
      const { root, info } = meshHere();
      const report = await takeBackup(root, info, f.dir, { progress: !f.json });
      if (f.json) printJson(report);
      else printLines(...describeBackup(report));
    });

  program
    .command("restore <dir>")
    .summary("put a backup back onto this project's mesh (a new one, or --force to replace what it holds)")
    .description(
      "Restore the backup in <dir> onto the mesh of this project (start one first: `cotal up` in a new folder, with the backup's --space). " +
        "Every file is checked against manifest.json (size and sha256) before anything changes; a file that differs is named and the " +
        "restore refused. A mesh that already holds data (posts, DMs, seat records, minted identities…) is refused unless --force. " +
        "A static mesh adopts the backup's identity: it is stopped, its .cotal/auth/ moved aside to .cotal/auth.replaced-<time>/, and " +
        "started again with the backup's, so credentials the backed-up mesh minted connect and revoked ones stay refused. Then the " +
        "mesh service and the host's manager are stopped, the space's streams restored (history, pending DMs with their consumers, " +
        "channel settings, identity records, the seat log) and both started again. A progress bar shows on a terminal.",
    )
    .option("--force", "replace whatever this mesh holds with the backup")
    .option("--json", "print what was restored as JSON")
    .action(async (dir: string, raw: Record<string, unknown>) => {
      const f = parseInput(RestoreFlags, { ...raw, dir }, { dir: "<dir>" });
      const { root, info } = meshHere();
      const report = await restoreBackup(root, info, f.dir, { force: !!f.force, progress: !f.json });
      if (f.json) printJson(report);
      else printLines(...describeRestore(report));
    });
}

/** The mesh of the nearest `.cotal/` folder: backup and restore act on the mesh host only. */
function meshHere(): { root: MeshRoot; info: MeshInfo } {
  const root = findMeshRoot();
  const info = root?.readInfo();
  if (!root || !info) throw new MeshNotFoundError(process.cwd());
  return { root, info };
}

const plural = (n: number, what: string) => `${n} ${what}${n === 1 ? "" : "s"}`;

function streamRows(streams: Array<{ name: string; messages: number; consumers: number }>): string[] {
  return table(
    ["STREAM", "MESSAGES", "CONSUMERS"],
    streams.map((s) => [s.name, String(s.messages), String(s.consumers)]),
  ).map((l) => `  ${l}`);
}

function describeBackup(r: BackupReport): string[] {
  return [
    `backup:   ${r.dir}`,
    `space:    ${r.space} (${r.mode}), taken ${r.createdAt} from nats-server ${r.natsServerVersion}`,
    `streams:  ${r.streams.length} (buckets are KV_…, object stores OBJ_…)`,
    ...streamRows(r.streams),
    `identity: ${r.mode === "static" ? `${plural(r.identityFiles, "file")} (operator, system and space accounts, signing key, revocations)` : "none (an open mesh has no credentials)"}`,
    `files:    ${plural(r.files, "file")}, ${r.bytes} bytes; manifest.json lists each with its size and sha256`,
  ];
}

function describeRestore(r: RestoreReport): string[] {
  const id = r.identity;
  return [
    `restored: ${r.dir} onto space ${r.space} (${r.mode})`,
    `backup:   taken ${r.backup.createdAt} by Cotal ${r.backup.cotalVersion} from nats-server ${r.backup.natsServerVersion}`,
    `streams:  ${r.streams.length}`,
    ...streamRows(r.streams),
    ...(id
      ? [
          `identity: the backup's (operator, accounts, signing key, revocations)${id.sameIdentity ? "; it was this mesh's already" : ""}` +
            (id.revocationsKept ? `; ${plural(id.revocationsKept, "later revocation")} of this mesh kept` : ""),
        ]
      : []),
    ...(r.replaced.length ? [`replaced: ${r.replaced.map((h) => `${h.stream} (${plural(h.messages, "message")})`).join(", ")}`] : []),
    ...r.notes.map((n) => `note:     ${n}`),
  ];
}

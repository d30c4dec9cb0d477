// A backup's manifest is checked before a restore changes anything: every file it lists must be
// there with its size and sha256, everything it names must be listed, and paths stay inside the
// folder. A changed, truncated or missing file is refused by name.
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { BackupInvalidError, BackupTamperedError, readVerifiedBackup } from "../../../cli/backup/backup-manifest.js";

let dir: string;
const sha = (b: Buffer) => `sha256:${createHash("sha256").update(b).digest("hex")}`;

function write(path: string, text: string): { path: string; bytes: number; sha256: string } {
  const bytes = Buffer.from(text);
  mkdirSync(dirname(join(dir, path)), { recursive: true });
  writeFileSync(join(dir, path), bytes);
  return { path, bytes: bytes.length, sha256: sha(bytes) };
}

function manifest(overrides: Record<string, unknown> = {}): void {
  const files = [write("streams/CHAT_t.snapshot", "packed store bytes"), write("streams/CHAT_t.json", '{"config":{"name":"CHAT_t"},"state":{"messages":1}}')];
  files.push(write("identity/operator.nk", "SOAEXAMPLE"));
  const m = {
    format: "cotal-backup",
    formatVersion: 1,
    cotalVersion: "0.1.0",
    natsServerVersion: "2.10.27",
    space: "t",
    mode: "static",
    createdAt: new Date().toISOString(),
    streams: [{ name: "CHAT_t", messages: 1, bytes: 10, consumers: 0 }],
    identity: ["operator.nk"],
    files,
    ...overrides,
  };
  writeFileSync(join(dir, "manifest.json"), JSON.stringify(m));
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "cotal-manifest-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe("a backup's manifest", () => {
  it("an intact backup verifies, and each file is counted", async () => {
    manifest();
    let seen = 0;
    const m = await readVerifiedBackup(dir, (b) => (seen += b));
    expect(m.space).toBe("t");
    expect(seen).toBe(m.files.reduce((n, f) => n + f.bytes, 0));
  });

  it("a changed byte is refused, naming the file", async () => {
    manifest();
    writeFileSync(join(dir, "streams/CHAT_t.snapshot"), "packed store bytez");
    const err = await readVerifiedBackup(dir).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BackupTamperedError);
    expect((err as BackupTamperedError).file).toBe("streams/CHAT_t.snapshot");
    expect((err as Error).message).toContain("does not match its sha256");
  });

  it("a truncated or missing file is refused, naming it", async () => {
    manifest();
    truncateSync(join(dir, "identity/operator.nk"), 3);
    await expect(readVerifiedBackup(dir)).rejects.toThrow("The backup file identity/operator.nk is 3 bytes, the manifest says 10");
    rmSync(join(dir, "identity/operator.nk"));
    await expect(readVerifiedBackup(dir)).rejects.toThrow("The backup file identity/operator.nk is missing");
  });

  it("a folder without a manifest (an unfinished backup) is not a backup", async () => {
    await expect(readVerifiedBackup(dir)).rejects.toBeInstanceOf(BackupInvalidError);
    await expect(readVerifiedBackup(dir)).rejects.toThrow("has no manifest.json");
  });

  it("a stream or identity file the manifest names but gives no sha256 for is refused", async () => {
    manifest({ identity: ["operator.nk", "clients/t.signing.nk"] });
    await expect(readVerifiedBackup(dir)).rejects.toThrow("names identity/clients/t.signing.nk but gives no size or sha256 for it");
  });

  it("paths that leave the folder are refused before any file is read", async () => {
    manifest({ files: [{ path: "../outside", bytes: 1, sha256: `sha256:${"0".repeat(64)}` }] });
    await expect(readVerifiedBackup(dir)).rejects.toBeInstanceOf(BackupInvalidError);
    manifest({ identity: ["/etc/passwd"] });
    await expect(readVerifiedBackup(dir)).rejects.toBeInstanceOf(BackupInvalidError);
  });
});

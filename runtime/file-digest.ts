// A file's digest as Cotal pins bytes everywhere (carried transcripts, agent files, backups).
import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";

/** `sha256:<hex>` of a file, read as a stream. */
export async function sha256File(file: string): Promise<string> {
  const hash = createHash("sha256");
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return `sha256:${hash.digest("hex")}`;
}

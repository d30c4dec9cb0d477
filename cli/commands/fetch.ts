import { randomBytes } from "node:crypto";
import { link, open, rename, rm, type FileHandle } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";
import type { Command } from "commander";
import { z } from "zod";
import { credsCaller, fetchArtifact } from "../../broker/index.js";
import { ARTIFACT_DIGEST } from "../../schemas/index.js";
import { jsonOption, meshOptions, resolveTarget } from "../mesh-client/mesh-target.js";
import { UsageError } from "../terminal/errors.js";
import { printJson, printLines } from "../terminal/output.js";
import { withSession } from "../mesh-client/session.js";
import { parseInput } from "../terminal/validate.js";

const FetchFlags = z.object({
  digest: z.string().regex(ARTIFACT_DIGEST, 'an artifact digest is "sha256:" and 64 lowercase hex characters (copy it from the message)'),
  output: z.string().min(1).optional(),
  json: z.boolean().optional(),
});

/**
 * `cotal fetch <digest>`: read an artifact through the mesh service and check its sha256. The
 * bytes go to a temporary file beside the destination and are renamed into place only once
 * they match: a damaged read leaves nothing behind. `-o -` streams to stdout instead (then a
 * mismatch is reported after the bytes, with exit 1).
 */
export function registerFetch(program: Command): void {
  const cmd = program
    .command("fetch")
    .summary("read an attached file (an artifact) by its digest")
    .description(
      "Read the bytes of an artifact (sent with `cotal send … --attach FILE`) and check them against its sha256 digest. " +
        "Writes to -o FILE, or to the sender's file name in the current folder (never over an existing file); `-o -` writes to standard output.",
    )
    .argument("<digest>", "the artifact's digest, sha256:<64 hex>")
    .option("-o, --output <file>", "where to write the bytes (`-` for standard output)");
  jsonOption(meshOptions(cmd)).action(async (digest: string, raw: Record<string, unknown>) => {
    const f = parseInput(FetchFlags, { ...raw, digest }, { digest: "<digest>", output: "--output" });
    const target = resolveTarget(raw);
    if (f.output === "-") {
      await withSession(target, (s) => fetchArtifact({ nc: s.nc, space: target.space, me: credsCaller(target.creds) }, f.digest, (c) => toStdout(c)));
      return;
    }
    const dir = f.output ? dirname(resolve(f.output)) : process.cwd();
    const temp = join(dir, `.cotal-fetch-${randomBytes(6).toString("hex")}`);
    let fh: FileHandle | undefined;
    try {
      const info = await withSession(target, (s) =>
        fetchArtifact({ nc: s.nc, space: target.space, me: credsCaller(target.creds) }, f.digest, async (c) => {
          fh ??= await openTemp(temp);
          await fh.write(c);
        }),
      );
      fh ??= await openTemp(temp); // an empty artifact
      await fh.close();
      fh = undefined;
      const dest = f.output ? resolve(f.output) : join(dir, basename(info.name));
      // The sender named the file; it must not replace one of ours unless asked with -o.
      const remedy = "Choose where to write it with -o FILE (or -o - for standard output).";
      if (!f.output && (info.name !== basename(info.name) || info.name.startsWith("."))) {
        throw new UsageError(`Not writing ${JSON.stringify(info.name)}: the sender's name is not a plain file name.`, { remedy });
      }
      if (f.output) await rename(temp, dest);
      else {
        // link() never replaces: a file of that name appearing meanwhile is refused, not overwritten.
        try {
          await link(temp, dest);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code === "EEXIST")
            throw new UsageError(`Not writing ${JSON.stringify(info.name)}: a file of that name exists here.`, { remedy });
          throw err;
        }
      }
      if (f.json) printJson({ ...info, path: dest });
      else printLines(`fetched ${info.name}: ${info.digest} (${info.size} bytes, sha256 checked) → ${dest}`);
    } finally {
      await fh?.close().catch(() => undefined);
      await rm(temp, { force: true }); // gone already after a rename; the temp name of a link
    }
  });
}

/** The temporary file, new and private; a destination folder that cannot take it is bad input. */
async function openTemp(file: string): Promise<FileHandle> {
  try {
    return await open(file, "wx", 0o600);
  } catch (cause) {
    throw new UsageError(`Cannot write in ${dirname(file)} (${(cause as NodeJS.ErrnoException).code ?? "error"}).`, {
      remedy: "Choose a writable place with -o FILE.",
      cause,
    });
  }
}

/** Write a chunk to stdout, waiting when its buffer is full. */
function toStdout(chunk: Buffer): Promise<void> | void {
  if (!process.stdout.write(chunk)) return new Promise((r) => process.stdout.once("drain", () => r()));
}

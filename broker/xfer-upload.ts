// Transcript carry, the sender's side (docs/manager.md "Transcript carry"): the operator publishes
// each chunk of the file, raw bytes, on its own subject into the target instance's transfer stream
// (broker/xfer.ts made it), several in flight at once, sending only the chunks the stream does not
// hold yet. No local state: an interrupted upload resumes from what the broker stored.
import { open } from "node:fs/promises";
import { setTimeout as sleep } from "node:timers/promises";
import { jetstream } from "@nats-io/jetstream";
import { CARRY_CHUNK_OVERHEAD, CotalError, xferChunkSubject, type TableReplyData, type XFER_COMMANDS } from "../schemas/index.js";
import type { ControlParty } from "./artifacts.js";
import { MeshServiceUnavailableError } from "./errors.js";
import { JS_OPTIONS } from "./js-access.js";
import { isTransientPublishError, isWrongLastSequence } from "./js-errors.js";
import { storageRefusalError } from "./provision.js";
import { callXfer, chunkSize } from "./xfer.js";

/** What one upload did. */
export interface UploadResult {
  stream: string;
  /** Bytes this run stored (0: the broker already held them all). */
  sent: number;
  /** Chunks this run stored. */
  chunks: number;
}

/** How many chunks are in flight at once: enough to keep the link and the store busy, 8 MiB of memory. */
export const UPLOAD_WINDOW = 8;
/** How often one upload begins again after an interruption before giving up (the user may re-run it). */
const RESUMES = 5;
/** How long one chunk's acknowledgement may take (a loaded 2-core host storing 8 MiB at once). */
const ACK_TIMEOUT_MS = 30_000;

/** An upload stopped by an interruption it may resume from: the broker still holds what it stored. */
class Interrupted extends Error {
  constructor(override readonly cause: unknown) {
    super("upload interrupted", { cause });
  }
}

/**
 * Upload `file` (its `digest` and `size` known) to `instance`'s transfer stream, sending only the
 * chunks the broker does not hold. An interruption on the way (the mesh service restarted or did
 * not answer in time, a chunk's acknowledgement did not come) begins again from what the broker
 * holds, up to RESUMES times; a killed run resumes the same way when it is run again. A chunk
 * another upload of the same bytes stored first is not sent twice (the stream refuses a second
 * message on its subject). `onProgress` gets the bytes the broker holds after each chunk (and once
 * at each begin).
 */
export async function uploadTransfer(
  party: ControlParty,
  t: { instance: string; file: string; digest: string; size: number },
  onProgress?: (stored: number) => void,
): Promise<UploadResult> {
  const done = { sent: 0, chunks: 0 };
  for (let attempt = 0; ; attempt++) {
    try {
      const stream = await uploadOnce(party, t, done, onProgress);
      return { stream, ...done };
    } catch (err) {
      if (!(err instanceof Interrupted) || attempt >= RESUMES) throw err instanceof Interrupted ? err.cause : err;
      await sleep(250 * (attempt + 1));
    }
  }
}

async function uploadOnce(
  party: ControlParty,
  t: { instance: string; file: string; digest: string; size: number },
  done: { sent: number; chunks: number },
  onProgress?: (stored: number) => void,
): Promise<string> {
  let begun: TableReplyData<typeof XFER_COMMANDS, "xfer-begin">;
  try {
    begun = await callXfer(party.nc, party.space, "xfer-begin", party.me, { instance: t.instance, digest: t.digest, size: t.size }, { timeoutMs: 30_000 });
  } catch (err) {
    throw err instanceof MeshServiceUnavailableError ? new Interrupted(err) : err;
  }
  const maxPayload = party.nc.info?.max_payload;
  if (maxPayload !== undefined && begun.chunkBytes + CARRY_CHUNK_OVERHEAD > maxPayload)
    throw new CotalError(
      "chunk-too-large",
      `This connection's server takes messages of ${maxPayload} bytes, less than a transfer chunk of ${begun.chunkBytes}.`,
      {
        remedy: "Carry from the mesh host itself, or give this server the hub's max_payload.",
      },
    );
  let stored = begun.stored;
  onProgress?.(stored);
  const have = new Set(begun.have);
  const missing = Array.from({ length: begun.chunks }, (_, i) => i).filter((i) => !have.has(i));
  if (missing.length === 0) return begun.stream;

  const js = jetstream(party.nc, JS_OPTIONS);
  const fh = await open(t.file, "r");
  const inFlight = new Set<Promise<void>>();
  let failure: unknown;
  const send = async (index: number, bytes: Buffer) => {
    const subject = xferChunkSubject(party.space, t.instance, t.digest, index);
    try {
      await js.publish(subject, bytes, { expect: { lastSubjectSequence: 0 }, timeout: ACK_TIMEOUT_MS });
      done.sent += bytes.length;
      done.chunks += 1;
    } catch (err) {
      // Another upload of these bytes stored this chunk first: the broker holds it, nothing to send.
      if (!isWrongLastSequence(err)) throw err;
    }
    stored += bytes.length;
    onProgress?.(stored);
  };
  try {
    for (const index of missing) {
      if (failure !== undefined) break;
      const length = chunkSize(index, t.size, begun.chunkBytes);
      const bytes = Buffer.allocUnsafe(length);
      const { bytesRead } = await fh.read(bytes, 0, length, index * begun.chunkBytes);
      if (bytesRead !== length)
        throw new CotalError("file-changed", `${t.file} is shorter than the ${t.size} bytes it had: it changed while it was carried.`, {
          remedy: "Run the carry again once the session is idle.",
        });
      const p: Promise<void> = send(index, bytes).then(
        () => void inFlight.delete(p),
        (err: unknown) => {
          inFlight.delete(p);
          failure ??= err;
        },
      );
      inFlight.add(p);
      if (inFlight.size >= UPLOAD_WINDOW) await Promise.race(inFlight);
    }
    await Promise.all(inFlight);
  } finally {
    await Promise.allSettled(inFlight);
    await fh.close();
  }
  if (failure !== undefined) {
    const subject = xferChunkSubject(party.space, t.instance, t.digest, 0);
    throw isTransientPublishError(failure) ? new Interrupted(failure) : storageRefusalError(subject, failure);
  }
  return begun.stream;
}

// Transcript carry (docs/manager.md "Transcript carry"): the wire types of the
// `xfer` endpoint (the mesh service's side: chunks into the per-instance Object Store bucket
// `cotal_xfer_<space>_<instance>`) and of the manager's `carry-*` commands.
import { z } from "zod";
import { ArtifactDigest } from "./control-commands.js";
import type { ControlTable } from "./control-commands.js";

/** Largest chunk of a carried transcript, raw bytes (less when the server's max payload is smaller). */
export const CARRY_CHUNK_BYTES = 128 * 1024;
/**
 * Largest transcript a manager takes, bytes; also each transfer bucket's byte limit, which the data
 * account reserves from its JetStream storage (4 GiB, shared with the space's streams).
 */
export const CARRY_MAX_BYTES = 256 * 1024 ** 2;
/** How long a claim, a staged transcript and an unfinished transfer live: 10 minutes. */
export const CARRY_TTL_MS = 10 * 60_000;

/** A Claude session id: a UUID (lowercase hex as Claude writes it). A title or name is not one. */
export const SESSION_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
export const SessionId = z.string().regex(SESSION_ID, "a session id is a UUID such as 0b6c…-…; a title or name is not an id").describe("a Claude session id");

/** The one-time claim a manager issues for a staged transcript: 32 lowercase hex. */
export const CarryClaim = z
  .string()
  .regex(/^[0-9a-f]{32}$/, "a claim is 32 lowercase hex characters")
  .describe("one-time claim for a staged transcript");

const Instance = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, "instance must be 1-64 letters, digits, '_' or '-'");
const Base64Chunk = z
  .base64()
  .max(Math.ceil(CARRY_CHUNK_BYTES / 3) * 4)
  .describe(`base64 of at most ${CARRY_CHUNK_BYTES} bytes`);
const Transfer = { instance: Instance.describe("the manager instance the transcript goes to"), digest: ArtifactDigest };

/**
 * The mesh service's transfer commands (`endpoint = xfer`): the operator's credential only. The
 * bucket lives in the data account (clients have no JetStream), so the service mediates it, as it
 * does artifacts; the object's chunks are addressed by the digest, so a resumed upload finds the
 * chunks the broker already stored, with no state on either side.
 */
export const XFER_COMMANDS = {
  "xfer-begin": {
    endpoint: "xfer",
    summary: "open (or find) the transfer of these bytes to an instance: what the broker already stores of it",
    args: z.object({ ...Transfer, size: z.number().int().nonnegative().max(CARRY_MAX_BYTES) }),
    reply: z.object({
      bucket: z.string(),
      chunkBytes: z.number().int().positive(),
      stored: z.number().int().nonnegative().describe("bytes the broker holds of this transfer (resume from here)"),
      nextSeq: z.number().int().nonnegative().describe("the chunk to send next"),
      complete: z.boolean().describe("every byte is stored and the object's record written"),
    }),
  },
  "xfer-chunk": {
    endpoint: "xfer",
    summary: "store one chunk, in order from 0; resending the last stored chunk is harmless",
    args: z.object({ ...Transfer, seq: z.number().int().nonnegative(), data: Base64Chunk }),
    reply: z.object({ stored: z.number().int().nonnegative() }),
  },
  "xfer-commit": {
    endpoint: "xfer",
    summary: "write the object's record once every byte is stored (size checked)",
    args: z.object({ ...Transfer, size: z.number().int().nonnegative() }),
    reply: z.object({ bucket: z.string(), chunks: z.number().int().nonnegative(), size: z.number().int().nonnegative() }),
  },
  "xfer-read": {
    endpoint: "xfer",
    summary: "one stored chunk of a committed transfer, by stream sequence (the target manager reads it)",
    args: z.object({ ...Transfer, cursor: z.number().int().positive().optional() }),
    reply: z.object({ data: z.string(), size: z.number().int().nonnegative(), next: z.number().int().positive().optional() }),
  },
  "xfer-remove": {
    endpoint: "xfer",
    summary: "purge a transfer's chunks and record from the bucket",
    args: z.object(Transfer),
    reply: z.object({ removed: z.boolean() }),
  },
} as const satisfies ControlTable;

/** A staged transcript's claim, as the manager issues it. */
const Claimed = z.object({
  claim: CarryClaim,
  session: SessionId,
  digest: ArtifactDigest,
  size: z.number().int().nonnegative(),
  expiresAt: z.number().int().describe("Unix ms; the claim is void after"),
});

/** The manager's carry commands, merged into MANAGER_COMMANDS. */
export const CARRY_COMMANDS = {
  "carry-begin": {
    endpoint: "manager",
    summary: "transcript carry: does this manager already hold these bytes staged (then a claim, nothing to send), or where to upload them",
    args: z.object({ session: SessionId, digest: ArtifactDigest, size: z.number().int().nonnegative().max(CARRY_MAX_BYTES) }),
    reply: z.union([Claimed.extend({ known: z.literal(true) }), z.object({ known: z.literal(false), bucket: z.string() })]),
  },
  "carry-commit": {
    endpoint: "manager",
    summary: "transcript carry: read the uploaded object, verify its sha256, stage it 0600, remove the broker copy, issue a one-time claim",
    args: z.object({ session: SessionId, digest: ArtifactDigest, size: z.number().int().nonnegative().max(CARRY_MAX_BYTES) }),
    reply: Claimed,
  },
  "carry-resolve": {
    endpoint: "manager",
    summary: "transcript carry: find a session on the manager's own host (its Claude config dir) and stage it",
    args: z.object({ session: SessionId }),
    reply: Claimed,
  },
} as const satisfies ControlTable;

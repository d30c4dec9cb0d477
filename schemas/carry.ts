// Transcript carry (docs/manager.md "Transcript carry"): the transfer stream of one manager
// instance and its chunk subjects, the wire types of the mesh service's `xfer` endpoint (it makes
// the stream and says what it holds) and of the manager's `carry-*` commands.
import { z } from "zod";
import { ArtifactDigest } from "./control-commands.js";
import type { ControlTable } from "./control-commands.js";
import { ROOT } from "./subjects.js";
import { assertToken } from "./tokens.js";

/**
 * Largest chunk of a carried transcript, raw bytes: what a server's default 1 MiB max payload
 * carries with 4 KiB left for the subject and headers (less when the max payload is smaller).
 */
export const CARRY_CHUNK_BYTES = 1024 * 1024 - 4 * 1024;
/** Room a chunk's message needs besides its bytes (subject, JetStream headers). */
export const CARRY_CHUNK_OVERHEAD = 4 * 1024;
/**
 * Largest transcript a manager takes, bytes; also each transfer stream's byte limit, which the data
 * account reserves from its JetStream storage (4 GiB, shared with the space's streams).
 */
export const CARRY_MAX_BYTES = 256 * 1024 ** 2;
/** How long a claim, a staged transcript and an unfinished transfer live: 10 minutes. */
export const CARRY_TTL_MS = 10 * 60_000;

/** The token after the space of every transfer subject: `cotal.<space>.xfer.…`. */
export const XFER_TOKEN = "xfer";

/**
 * Chunk `index` of the transfer of `digest` to manager `instance`:
 * `cotal.<space>.xfer.<instance>.<hex of the sha256>.<index>`. One subject per chunk, so a chunk is
 * written once (the stream keeps one message per subject and refuses a second) and an upload that
 * resumes finds which chunks the broker holds by their subjects.
 */
export function xferChunkSubject(space: string, instance: string, digest: string, index: number): string {
  return `${xferObjectFilter(space, instance, digest).slice(0, -2)}.${index}`;
}

/** Every chunk subject of one transfer: `cotal.<space>.xfer.<instance>.<hex>.*`. */
export function xferObjectFilter(space: string, instance: string, digest: string): string {
  const hex = digest.startsWith("sha256:") ? digest.slice("sha256:".length) : "";
  if (!/^[0-9a-f]{64}$/.test(hex)) throw new Error(`not a sha256 digest: ${digest}`);
  return `${xferFilter(space, instance).slice(0, -2)}.${hex}.*`;
}

/** Every transfer subject of one manager instance (its stream's subjects, its read permission): `cotal.<space>.xfer.<instance>.>`. */
export function xferFilter(space: string, instance: string): string {
  return `${ROOT}.${assertToken("space", "space", space)}.${XFER_TOKEN}.${assertToken("name", "instance", instance)}.>`;
}

/** The chunk index a transfer subject ends with (undefined: not a chunk subject). */
export function xferChunkIndex(subject: string): number | undefined {
  const last = subject.slice(subject.lastIndexOf(".") + 1);
  return /^(0|[1-9][0-9]{0,8})$/.test(last) ? Number(last) : undefined;
}

/** A session id of the carry runtime: a UUID (lowercase hex, as Claude Code writes it). A title or name is not one. */
export const SESSION_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
export const SessionId = z
  .string()
  .regex(SESSION_ID, "a session id is a UUID such as 0b6c…-…; a title or name is not an id")
  .describe("an agent CLI's session id (a UUID)");

/** The one-time claim a manager issues for a staged transcript: 32 lowercase hex. */
export const CarryClaim = z
  .string()
  .regex(/^[0-9a-f]{32}$/, "a claim is 32 lowercase hex characters")
  .describe("one-time claim for a staged transcript");

const Instance = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, "instance must be 1-64 letters, digits, '_' or '-'");
const Transfer = { instance: Instance.describe("the manager instance the transcript goes to"), digest: ArtifactDigest };
const Bytes = z.number().int().nonnegative();

/**
 * The mesh service's transfer commands (`endpoint = xfer`): the operator's credential (a manager's
 * may remove what was carried to it). Clients have no JetStream, so the service makes the
 * instance's stream in the data account and says which chunks it holds; the bytes themselves go
 * straight to the stream (the operator publishes each chunk on its subject) and to the manager
 * (which reads them as they pass, and from the stream what it missed).
 */
export const XFER_COMMANDS = {
  "xfer-begin": {
    endpoint: "xfer",
    summary: "make (or find) the instance's transfer stream, and say which chunks of these bytes it holds",
    args: z.object({ ...Transfer, size: Bytes.max(CARRY_MAX_BYTES) }),
    reply: z.object({
      stream: z.string(),
      chunkBytes: z.number().int().positive().describe("bytes of every chunk but the last"),
      chunks: Bytes.describe("chunks of the whole transfer"),
      have: z.array(Bytes).describe("indexes of the chunks the stream holds (an upload sends the others)"),
      stored: Bytes.describe("bytes the stream holds of this transfer"),
    }),
  },
  "xfer-remove": {
    endpoint: "xfer",
    summary: "purge a transfer's chunks from the instance's stream",
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
    summary:
      "transcript carry: does this manager already hold these bytes staged (then a claim, nothing to send); else it starts taking the chunks as they are uploaded",
    args: z.object({ session: SessionId, digest: ArtifactDigest, size: z.number().int().nonnegative().max(CARRY_MAX_BYTES) }),
    reply: z.union([Claimed.extend({ known: z.literal(true) }), z.object({ known: z.literal(false), stream: z.string() })]),
  },
  "carry-commit": {
    endpoint: "manager",
    summary:
      "transcript carry: take from the stream the chunks it did not see pass, check the sha256 hashed on the way, stage it 0600, remove the broker copy, issue a one-time claim",
    args: z.object({ session: SessionId, digest: ArtifactDigest, size: z.number().int().nonnegative().max(CARRY_MAX_BYTES) }),
    reply: Claimed,
  },
  "carry-resolve": {
    endpoint: "manager",
    summary: "transcript carry: find a session on the manager's own host (the carry runtime's session store) and stage it",
    args: z.object({ session: SessionId }),
    reply: Claimed,
  },
} as const satisfies ControlTable;

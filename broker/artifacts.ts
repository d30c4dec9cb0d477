import { createHash, randomUUID, type Hash } from "node:crypto";
import { createReadStream } from "node:fs";
import { open, stat } from "node:fs/promises";
import { basename, extname } from "node:path";
import { jetstream, jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { Objm, type ObjectInfo, type ObjectStore } from "@nats-io/obj";
import type { NatsConnection } from "@nats-io/transport-node";
import { z } from "zod";
import {
  ARTIFACT_CHUNK_BYTES,
  type ARTIFACT_COMMANDS,
  ArtifactGrant,
  ARTIFACT_DIGEST,
  CotalError,
  names,
  principalId,
  type ArtifactInfo,
  type ControlArgs,
  type ControlReplyData,
  type Part,
  type Principal,
  type TableParsedArgs,
} from "../schemas/index.js";
import { callControl } from "./control.js";
import type { Logger } from "./log.js";

/** What a begin carries once checked (its audience defaulted). */
type BeginArgs = TableParsedArgs<typeof ARTIFACT_COMMANDS, "artifact-begin">;

/** By default an upload with no chunk for this long is dropped (its chunks are purged). */
export const UPLOAD_IDLE_MS = 60_000;
/** Uploads one principal may have open at once. */
export const MAX_UPLOADS_PER_CALLER = 4;
/** Chunks handed to the Object Store writer but not yet written, per upload. */
const WRITE_AHEAD_CHUNKS = 4;

const META = { name: "cotal-name", mediaType: "cotal-media-type", uploader: "cotal-uploader", audience: "cotal-audience" } as const;

/**
 * What the service needs to decide who may read an artifact (static meshes; without it, an open
 * mesh, everyone may): the same channel read scope the broker enforces, and a caller's identity.
 */
export interface ArtifactAccess {
  mayReadChannel(caller: Principal, channel: string): boolean | Promise<boolean>;
  /** The caller's minted identity; undefined for Cotal's own service identities (and unknown names). */
  identity(caller: Principal): Promise<{ profile: string; role?: string | undefined } | undefined>;
}

/** The grants recorded on an object (malformed metadata grants nothing). */
function grantsOf(o: ObjectInfo): ArtifactGrant[] {
  try {
    const r = z.array(ArtifactGrant).safeParse(JSON.parse(o.metadata?.[META.audience] ?? "[]"));
    return r.success ? r.data : [];
  } catch {
    return [];
  }
}

/** `a` and the grants of `b` it lacks. */
function mergeGrants(a: ArtifactGrant[], b: ArtifactGrant[]): ArtifactGrant[] {
  const seen = new Set(a.map((g) => JSON.stringify(g)));
  return [...a, ...b.filter((g) => !seen.has(JSON.stringify(g)))];
}

/** An artifact part as Cotal publishes it: `{kind: "artifact", name, mediaType, digest, size, bucket}`. */
export type ArtifactPart = Extract<Part, { kind: "artifact" }>;

/** No artifact with that digest is stored in the space. */
export class ArtifactNotFoundError extends CotalError {
  constructor(digest: string, space: string) {
    super("artifact-not-found", `No artifact ${digest} is stored in space ${space}.`, {
      remedy: "Check the digest (copy it from the message's artifact part); the sender may have sent it to another mesh.",
    });
  }
}

/** The bytes read or sent do not have the digest (or size) they should. */
export class ArtifactDigestMismatchError extends CotalError {
  constructor(what: string) {
    super("digest-mismatch", what, { remedy: "Nothing was kept. Send (or fetch) it again; if it happens again the stored bytes are damaged." });
  }
}

/** The upload is unknown to the mesh service: never begun, finished, dropped when idle, or another caller's. */
export class UnknownUploadError extends CotalError {
  constructor(upload: string) {
    super("unknown-upload", `No upload ${upload} is open for this caller (finished, dropped when idle, or never begun).`, {
      remedy: "Begin the upload again with artifact-begin.",
    });
  }
}

interface Upload {
  id: string;
  owner: string;
  want: BeginArgs;
  hash: Hash;
  received: number;
  nextSeq: number;
  lastLength: number;
  controller: ReadableStreamDefaultController<Uint8Array>;
  /** Resolves when the writer wants more (the write-ahead queue has room). */
  room: () => Promise<void>;
  put: Promise<ObjectInfo>;
  failure?: unknown;
  timer: NodeJS.Timeout;
}

/** `SHA-256=<base64url>` as the Object Store records it, from `sha256:<hex>`. */
function objDigest(digest: string): string {
  return `SHA-256=${Buffer.from(digest.slice("sha256:".length), "hex").toString("base64url")}=`;
}

/**
 * The mesh service's side of artifacts: one Object Store per space, objects named by their
 * digest (`sha256:<hex>`), so storing known bytes again stores nothing. Uploads stream into the
 * store as chunks arrive (at most WRITE_AHEAD_CHUNKS held in memory) and are kept only if the
 * bytes have the digest and size they were begun with; reads are served chunk by chunk by
 * stream sequence, so the service holds no read state.
 */
export class ArtifactService {
  private readonly uploads = new Map<string, Upload>();

  private constructor(
    private readonly space: string,
    private readonly os: ObjectStore,
    private readonly jsm: JetStreamManager,
    private readonly log: Logger,
    private readonly access: ArtifactAccess | undefined,
    private readonly idleMs: number,
  ) {}

  /**
   * Bind the space's artifacts bucket (ensureSpace creates it). Without `access`, everyone may
   * read. An upload idle for `idleMs` (default UPLOAD_IDLE_MS) is dropped.
   */
  static async open(nc: NatsConnection, space: string, log: Logger, access?: ArtifactAccess, idleMs = UPLOAD_IDLE_MS): Promise<ArtifactService> {
    const os = await new Objm(jetstream(nc)).open(names.artifactsBucket(space));
    return new ArtifactService(space, os, await jetstreamManager(nc), log.child({ part: "artifacts" }), access, idleMs);
  }

  /**
   * May `caller` read this object: its uploader, an admin or Cotal service, or someone a grant
   * names (a reader of the channel, the principal, a holder of the role).
   */
  private async mayRead(caller: Principal, o: ObjectInfo): Promise<boolean> {
    if (!this.access) return true;
    const id = principalId(caller);
    if (o.metadata?.[META.uploader] === id) return true;
    const who = await this.access.identity(caller);
    if (who ? who.profile === "admin" : caller.actor.startsWith("cotal_")) return true;
    for (const g of grantsOf(o)) {
      if ("to" in g && g.to === id) return true;
      if ("role" in g && who?.role === g.role) return true;
      if ("channel" in g && (await this.access.mayReadChannel(caller, g.channel))) return true;
    }
    return false;
  }

  private get bucket(): string {
    return names.artifactsBucket(this.space);
  }

  private info(o: ObjectInfo): ArtifactInfo {
    const m = o.metadata ?? {};
    return {
      digest: o.name,
      size: o.size,
      name: m[META.name] ?? o.name,
      mediaType: m[META.mediaType] ?? "application/octet-stream",
      bucket: this.bucket,
      ...(m[META.uploader] ? { uploader: m[META.uploader] } : {}),
    };
  }

  private async stored(digest: string): Promise<ObjectInfo | undefined> {
    const o = await this.os.info(digest);
    return o && !o.deleted && o.digest === objDigest(digest) ? o : undefined;
  }

  async begin(caller: Principal, want: BeginArgs): Promise<ControlReplyData<"artifact-begin">> {
    const known = await this.stored(want.digest);
    const owner = principalId(caller);
    if (known && known.size === want.size && (await this.mayRead(caller, known))) {
      // One who may read it may share it further: the new audience is added, nothing is sent.
      const audience = mergeGrants(grantsOf(known), want.audience);
      if (audience.length !== grantsOf(known).length)
        await this.os.update(want.digest, { metadata: { ...known.metadata, [META.audience]: JSON.stringify(audience) } });
      return { known: true, chunkBytes: ARTIFACT_CHUNK_BYTES, info: this.info(known) };
    }
    // Bytes the caller may not read yet: it proves it holds them by sending them. The stored
    // object keeps its uploader and audience, and the caller is added to it.
    const metadata: Record<string, string> = known
      ? { ...known.metadata, [META.audience]: JSON.stringify(mergeGrants(grantsOf(known), [...want.audience, { to: owner }])) }
      : { [META.name]: want.name, [META.mediaType]: want.mediaType, [META.uploader]: owner, [META.audience]: JSON.stringify(want.audience) };
    if ([...this.uploads.values()].filter((u) => u.owner === owner).length >= MAX_UPLOADS_PER_CALLER) {
      throw new CotalError("too-many-uploads", `${owner} already has ${MAX_UPLOADS_PER_CALLER} uploads open.`, {
        remedy: "Finish or abandon one (it is dropped after a minute idle).",
      });
    }
    let controller!: ReadableStreamDefaultController<Uint8Array>;
    let wake: (() => void) | undefined;
    const stream = new ReadableStream<Uint8Array>(
      {
        start: (c) => void (controller = c),
        pull: () => {
          wake?.();
          wake = undefined;
        },
      },
      new CountQueuingStrategy({ highWaterMark: WRITE_AHEAD_CHUNKS }),
    );
    const id = randomUUID();
    const put = this.os.put({ name: want.digest, metadata, options: { max_chunk_size: ARTIFACT_CHUNK_BYTES } }, stream);
    const upload: Upload = {
      id,
      owner,
      want,
      hash: createHash("sha256"),
      received: 0,
      nextSeq: 0,
      lastLength: 0,
      controller,
      room: () => ((controller.desiredSize ?? 1) > 0 ? Promise.resolve() : new Promise<void>((r) => (wake = r))),
      put,
      timer: setTimeout(() => this.abort(upload, new CotalError("upload-idle", "upload dropped: idle")), this.idleMs).unref(),
    };
    put.catch((err: unknown) => {
      upload.failure = err;
      wake?.();
    });
    this.uploads.set(id, upload);
    this.log.info({ upload: id, who: owner, digest: want.digest, size: want.size }, "artifact upload begun");
    return { known: false, upload: id, chunkBytes: ARTIFACT_CHUNK_BYTES };
  }

  private open(caller: Principal, id: string): Upload {
    const u = this.uploads.get(id);
    if (!u || u.owner !== principalId(caller)) throw new UnknownUploadError(id);
    if (u.failure) {
      this.abort(u, u.failure);
      throw new CotalError("upload-failed", `The upload failed while storing: ${u.failure instanceof Error ? u.failure.message : String(u.failure)}`, {
        cause: u.failure,
      });
    }
    return u;
  }

  async chunk(caller: Principal, args: ControlArgs<"artifact-chunk">): Promise<ControlReplyData<"artifact-chunk">> {
    const u = this.open(caller, args.upload);
    const bytes = Buffer.from(args.data, "base64");
    // A resent last chunk (its reply was lost) is acknowledged again, not added twice.
    if (args.seq === u.nextSeq - 1 && bytes.length === u.lastLength) return { received: u.received };
    if (args.seq !== u.nextSeq)
      throw new CotalError("out-of-order", `Expected chunk ${u.nextSeq}, got ${args.seq}.`, { remedy: "Send chunks in order from 0." });
    if (u.received + bytes.length > u.want.size) {
      this.abort(u, new ArtifactDigestMismatchError("more bytes than begun with"));
      throw new ArtifactDigestMismatchError(`The upload sent more than the ${u.want.size} bytes it was begun with; it was dropped.`);
    }
    u.timer.refresh();
    u.hash.update(bytes);
    u.received += bytes.length;
    u.nextSeq += 1;
    u.lastLength = bytes.length;
    u.controller.enqueue(bytes);
    await u.room();
    if (u.failure) this.open(caller, args.upload);
    return { received: u.received };
  }

  async commit(caller: Principal, args: ControlArgs<"artifact-commit">): Promise<ArtifactInfo> {
    const u = this.open(caller, args.upload);
    const got = `sha256:${u.hash.digest("hex")}`;
    if (u.received !== u.want.size || got !== u.want.digest) {
      this.abort(u, new Error("digest mismatch"));
      throw new ArtifactDigestMismatchError(
        `The ${u.received} bytes sent have digest ${got}, not the ${u.want.size} bytes of ${u.want.digest} the upload was begun with; nothing was kept.`,
      );
    }
    this.uploads.delete(u.id);
    clearTimeout(u.timer);
    u.controller.close();
    let o: ObjectInfo;
    try {
      o = await u.put;
    } catch (cause) {
      // The Object Store purged what it had written: nothing is kept (for example the bucket is full).
      throw new CotalError("upload-failed", `Storing ${u.want.digest} failed: ${cause instanceof Error ? cause.message : String(cause)}; nothing was kept.`, {
        cause,
      });
    }
    this.log.info({ upload: u.id, digest: u.want.digest, size: o.size }, "artifact stored");
    return this.info(o);
  }

  /** One chunk of a stored artifact: the first, or the one at or after `cursor`. Unreadable reads as absent. */
  async get(caller: Principal, args: ControlArgs<"artifact-get">): Promise<ControlReplyData<"artifact-get">> {
    const o = await this.stored(args.digest);
    if (!o || !(await this.mayRead(caller, o))) throw new ArtifactNotFoundError(args.digest, this.space);
    const info = this.info(o);
    if (o.size === 0) return { info, data: "" };
    const m = await this.jsm.direct.getMessage(`OBJ_${this.bucket}`, { seq: args.cursor ?? 1, next_by_subj: `$O.${this.bucket}.C.${o.nuid}` });
    if (!m) return { info, data: "" };
    return { info, data: Buffer.from(m.data).toString("base64"), next: m.seq + 1 };
  }

  private abort(u: Upload, why: unknown): void {
    if (!this.uploads.delete(u.id)) return;
    clearTimeout(u.timer);
    // Erroring the stream makes the Object Store purge the chunks already written.
    u.controller.error(why);
    this.log.info({ upload: u.id, digest: u.want.digest, reason: why instanceof Error ? why.message : String(why) }, "artifact upload dropped");
  }

  /** Drop every open upload. */
  stop(): void {
    for (const u of [...this.uploads.values()]) this.abort(u, new Error("the mesh service stopped"));
  }
}

// ---- client side ------------------------------------------------------------------------

/** Who calls: a connection, its space and the principal it calls as (an Endpoint is one). */
export interface ControlParty {
  readonly nc: NatsConnection;
  readonly space: string;
  readonly me: Principal;
}

const MEDIA_TYPES: Record<string, string> = {
  ".txt": "text/plain",
  ".md": "text/markdown",
  ".json": "application/json",
  ".csv": "text/csv",
  ".html": "text/html",
  ".png": "image/png",
  ".jpg": "image/jpeg",
  ".jpeg": "image/jpeg",
  ".gif": "image/gif",
  ".svg": "image/svg+xml",
  ".pdf": "application/pdf",
  ".zip": "application/zip",
  ".gz": "application/gzip",
  ".tar": "application/x-tar",
};

/** A media type guessed from a file name's extension; `application/octet-stream` otherwise. */
export function mediaTypeOf(file: string): string {
  return MEDIA_TYPES[extname(file).toLowerCase()] ?? "application/octet-stream";
}

/** `sha256:<hex>` of a file, read as a stream. */
export async function fileDigest(file: string): Promise<string> {
  const hash = createHash("sha256");
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return `sha256:${hash.digest("hex")}`;
}

/**
 * Store a file as an artifact through the mesh service and return the part that names it.
 * Content-addressed: when the space already holds these bytes, nothing is sent. The file is
 * read twice (digest, then chunks), never held whole in memory.
 */
export async function putArtifact(
  party: ControlParty,
  file: string,
  opts: { mediaType?: string; name?: string; audience?: ArtifactGrant[] } = {},
): Promise<{ part: ArtifactPart; uploaded: boolean }> {
  const size = (await stat(file)).size;
  const digest = await fileDigest(file);
  const call = <C extends "artifact-begin" | "artifact-chunk" | "artifact-commit">(command: C, args: ControlArgs<C>) =>
    callControl(party.nc, party.space, command, party.me, args as never, { timeoutMs: 30_000 }) as Promise<ControlReplyData<C>>;
  const meta = { name: opts.name ?? basename(file), mediaType: opts.mediaType ?? mediaTypeOf(file) };
  const begun = await call("artifact-begin", { digest, size, ...meta, audience: opts.audience ?? [] });
  const part = (info: ArtifactInfo): ArtifactPart => ({
    kind: "artifact",
    name: meta.name,
    mediaType: meta.mediaType,
    digest: info.digest,
    size: info.size,
    bucket: info.bucket,
  });
  if (begun.known && begun.info) return { part: part(begun.info), uploaded: false };
  const upload = begun.upload!;
  const fh = await open(file, "r");
  try {
    const buf = Buffer.alloc(Math.min(begun.chunkBytes, ARTIFACT_CHUNK_BYTES));
    for (let seq = 0, offset = 0; offset < size; seq += 1) {
      const { bytesRead } = await fh.read(buf, 0, buf.length, offset);
      if (bytesRead === 0) break;
      offset += bytesRead;
      await call("artifact-chunk", { upload, seq, data: buf.subarray(0, bytesRead).toString("base64") });
    }
  } finally {
    await fh.close();
  }
  return { part: part(await call("artifact-commit", { upload })), uploaded: true };
}

/**
 * Read an artifact through the mesh service, handing each chunk to `sink` in order, and check
 * its size and sha256 at the end: a mismatch is ArtifactDigestMismatchError (the sink has then
 * seen bytes that must not be trusted; write to a temporary place and keep it only on success).
 */
export async function fetchArtifact(party: ControlParty, digest: string, sink: (chunk: Buffer) => void | Promise<void>): Promise<ArtifactInfo> {
  if (!ARTIFACT_DIGEST.test(digest))
    throw new CotalError("invalid-digest", `Invalid artifact digest ${JSON.stringify(digest)}: it must be "sha256:" and 64 lowercase hex characters.`);
  const hash = createHash("sha256");
  let received = 0;
  let cursor: number | undefined;
  let info: ArtifactInfo | undefined;
  do {
    const r = await callControl(
      party.nc,
      party.space,
      "artifact-get",
      party.me,
      { digest, ...(cursor !== undefined ? { cursor } : {}) },
      { timeoutMs: 30_000 },
    );
    info = r.info;
    const bytes = Buffer.from(r.data, "base64");
    if (bytes.length === 0) break;
    received += bytes.length;
    if (received > info.size) break;
    hash.update(bytes);
    await sink(bytes);
    cursor = r.next;
  } while (received < info.size && cursor !== undefined);
  const got = `sha256:${hash.digest("hex")}`;
  if (received !== info.size || got !== digest) {
    throw new ArtifactDigestMismatchError(
      `The bytes read for ${digest} do not match it (${received} of ${info.size} bytes, digest ${received === info.size ? got : "not computed"}); do not use them.`,
    );
  }
  return info;
}

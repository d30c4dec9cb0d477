// Transcript transfer (docs/manager.md "Transcript carry"): the mesh service's `xfer` endpoint, which writes a carried
// transcript's chunks into the Object Store bucket of one manager instance,
// `cotal_xfer_<space>_<instance>`, and serves them back to that manager; plus the two client
// loops (upload from the CLI, read on the manager). Clients of a static mesh have no JetStream of
// their own (docs/security.md), so the service mediates the bucket, as it does artifacts.
import { open } from "node:fs/promises";
import { setTimeout as sleep } from "node:timers/promises";
import { headers, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import { jetstream, jetstreamManager, StorageType, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { Objm } from "@nats-io/obj";
import { clusterReplicas } from "./provision.js";
import {
  LOCAL_OWNER,
  CARRY_CHUNK_BYTES,
  CARRY_MAX_BYTES,
  CARRY_TTL_MS,
  CotalError,
  names,
  principalId,
  XFER_COMMANDS,
  type Principal,
  type TableParsedArgs,
  type TableReplyData,
} from "../schemas/index.js";
import { IdentityRegistry } from "./auth/identity-registry.js";
import { SERVICE_PRINCIPALS } from "./auth/permissions.js";
import type { ControlParty } from "./artifacts.js";
import { controlCaller, serveControl } from "./control.js";
import { ControlCallError, MeshServiceUnavailableError } from "./errors.js";
import { isWrongLastSequence } from "./js-errors.js";
import type { Logger } from "./log.js";

type Args<C extends keyof typeof XFER_COMMANDS> = TableParsedArgs<typeof XFER_COMMANDS, C>;
type Reply<C extends keyof typeof XFER_COMMANDS> = TableReplyData<typeof XFER_COMMANDS, C>;

/** A typed caller of the `xfer` commands. */
export const callXfer = controlCaller(XFER_COMMANDS);

/** Headers each stored chunk carries, so a resumed upload learns where it stands from the broker alone. */
const SEQ_HEADER = "Cotal-Chunk-Seq";
const STORED_HEADER = "Cotal-Stored";
/** Bytes of a chunk request besides the chunk's base64 (envelope, names, digest), with room to spare. */
const REQUEST_OVERHEAD = 2_048;

/** The raw chunk size that fits the server's max payload as base64 in a control request. */
export function carryChunkBytes(maxPayload: number | undefined): number {
  const fit = Math.floor(Math.max(0, (maxPayload ?? 1024 * 1024) - REQUEST_OVERHEAD) / 4) * 3;
  return Math.max(1, Math.min(CARRY_CHUNK_BYTES, fit));
}

/** What the broker holds of one transfer. */
interface Progress {
  nextSeq: number;
  stored: number;
  /** Stream sequence of the last chunk (0: none): the expected last sequence of the next append. */
  lastStreamSeq: number;
  complete: boolean;
}

/** A transfer a begin announced: its declared size, and where it stands (cached; rebuilt from the broker). */
interface Open {
  size: number;
  progress: Progress;
  touched: number;
}

/** The transfer is unknown to the service (never begun, swept, or the service restarted): begin again. */
export class UnknownTransferError extends CotalError {
  constructor(digest: string, instance: string) {
    super(
      "unknown-transfer",
      `No transfer of ${digest} to ${instance} is open (never begun, swept after ${CARRY_TTL_MS / 60_000} minutes idle, or the mesh service restarted).`,
      {
        remedy: "Run the carry again: it resumes from what the broker stored.",
      },
    );
  }
}

export interface XferServiceOptions {
  /** Static meshes: only the operator's credential may call (open meshes check nothing). */
  operatorOnly: boolean;
  /** Each bucket's byte limit (default CARRY_MAX_BYTES, 256 MiB). */
  maxBytes?: number;
  /** How long a broker copy lives (the bucket's max age, default CARRY_TTL_MS). */
  ttlMs?: number;
}

/**
 * The mesh service's side of transcript carry. One bucket per manager instance, created on first
 * use in the data account with a max age of 10 minutes (a stale transfer's chunks expire with it).
 * An object's chunks live on `$O.<bucket>.C.<hex of its sha256>` (not a random nuid): a resumed
 * upload finds them, and each carries its sequence and the bytes stored through it in headers.
 * Appends carry `Nats-Expected-Last-Subject-Sequence`, so two uploads of the same bytes cannot
 * interleave. The record (`$O.<bucket>.M.…`) is the Object Store's own, so `nats obj` lists it.
 */
export class XferService {
  private readonly buckets = new Set<string>();
  private readonly open = new Map<string, Open>();
  private readonly sub: Subscription;
  private readonly sweep: NodeJS.Timeout;

  private constructor(
    nc: NatsConnection,
    private readonly space: string,
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    private readonly log: Logger,
    private readonly o: XferServiceOptions,
    private readonly identities: IdentityRegistry | undefined,
    /** A transfer bucket's replicas: R3 on a cluster of three or more, as every space stream. */
    private readonly replicas: number,
  ) {
    const guard =
      <A extends { instance: string }, R>(f: (a: A) => Promise<R>, managerMay = false) =>
      async (a: A, caller: Principal) => {
        await this.authorize(caller, a.instance, managerMay);
        return f(a);
      };
    this.sub = serveControl(
      nc,
      space,
      "xfer",
      XFER_COMMANDS,
      {
        "xfer-begin": guard((a: Args<"xfer-begin">) => this.begin(a)),
        "xfer-chunk": guard((a: Args<"xfer-chunk">) => this.chunk(a)),
        "xfer-commit": guard((a: Args<"xfer-commit">) => this.commit(a)),
        "xfer-read": guard((a: Args<"xfer-read">) => this.read(a), true),
        "xfer-remove": guard((a: Args<"xfer-remove">) => this.remove(a), true),
      },
      log,
    );
    this.sweep = setInterval(() => {
      for (const [k, v] of this.open) if (Date.now() - v.touched > (o.ttlMs ?? CARRY_TTL_MS)) this.open.delete(k);
    }, 30_000).unref();
  }

  /** Serve the `xfer` endpoint of `space` on the mesh service's connection (the data account's). */
  static async start(nc: NatsConnection, space: string, log: Logger, o: XferServiceOptions): Promise<XferService> {
    const js = jetstream(nc);
    const identities = o.operatorOnly ? new IdentityRegistry(await new Kvm(js).open(names.membersBucket(space), { bindOnly: true })) : undefined;
    return new XferService(nc, space, js, await jetstreamManager(nc), log.child({ part: "xfer" }), o, identities, clusterReplicas(nc));
  }

  stop(): void {
    this.sub.unsubscribe();
    clearInterval(this.sweep);
  }

  /**
   * Static meshes: the operator's credential may do anything here; a manager's credential (profile
   * `manager`) may only read and remove transfers to the instance named like itself.
   */
  private async authorize(caller: Principal, instance: string, managerMay: boolean): Promise<void> {
    if (!this.o.operatorOnly || principalId(caller) === principalId(SERVICE_PRINCIPALS.cli)) return;
    if (managerMay && caller.owner === LOCAL_OWNER && instance === caller.actor && (await this.identities?.get(caller))?.profile === "manager") return;
    throw new CotalError(
      "not-allowed",
      `Only the mesh host's operator credential may carry transcripts${managerMay ? `, and only manager ${instance}'s own credential may read what was carried to it` : ""}.`,
      {
        remedy:
          "Run `cotal spawn --resume` on the mesh host, or pass the operator's credential with --creds; a manager on another host runs with --instance set to its credential's name.",
      },
    );
  }

  private async bucket(instance: string): Promise<string> {
    const bucket = names.xferBucket(this.space, instance);
    if (!this.buckets.has(bucket)) {
      await new Objm(this.js).create(bucket, {
        storage: StorageType.File,
        replicas: this.replicas,
        ttl: (this.o.ttlMs ?? CARRY_TTL_MS) * 1_000_000,
        max_bytes: this.o.maxBytes ?? CARRY_MAX_BYTES,
        description: `transcripts carried to manager ${instance}`,
      });
      this.buckets.add(bucket);
    }
    return bucket;
  }

  private subjects(bucket: string, digest: string) {
    const hex = digest.slice("sha256:".length);
    return { stream: `OBJ_${bucket}`, chunks: `$O.${bucket}.C.${hex}`, meta: `$O.${bucket}.M.${Buffer.from(digest).toString("base64url")}` };
  }

  /** What the broker holds of a transfer; chunks with a gap (some expired) are purged and it starts over. */
  private async progress(bucket: string, digest: string, size: number): Promise<Progress> {
    const s = this.subjects(bucket, digest);
    const count = (await this.jsm.streams.info(s.stream, { subjects_filter: s.chunks })).state.subjects?.[s.chunks] ?? 0;
    const none: Progress = { nextSeq: 0, stored: 0, lastStreamSeq: 0, complete: false };
    if (count === 0) return none;
    const last = await this.jsm.direct.getMessage(s.stream, { last_by_subj: s.chunks });
    const seq = Number(last?.header?.get(SEQ_HEADER));
    const stored = Number(last?.header?.get(STORED_HEADER));
    if (!last || seq + 1 !== count || !Number.isInteger(stored) || stored > size) {
      await this.jsm.streams.purge(s.stream, { filter: s.chunks });
      await this.jsm.streams.purge(s.stream, { filter: s.meta });
      return none;
    }
    const meta = await this.jsm.direct.getMessage(s.stream, { last_by_subj: s.meta }).catch(() => null);
    const record = meta ? (JSON.parse(new TextDecoder().decode(meta.data)) as { size?: number; deleted?: boolean }) : undefined;
    return { nextSeq: count, stored, lastStreamSeq: last.seq, complete: record?.size === size && record.deleted !== true && stored === size };
  }

  private key(a: { instance: string; digest: string }): string {
    return `${a.instance}/${a.digest}`;
  }

  private async begin(a: Args<"xfer-begin">): Promise<Reply<"xfer-begin">> {
    const bucket = await this.bucket(a.instance);
    const progress = await this.progress(bucket, a.digest, a.size);
    this.open.set(this.key(a), { size: a.size, progress, touched: Date.now() });
    this.log.info({ instance: a.instance, digest: a.digest, size: a.size, stored: progress.stored }, "transfer begun");
    return { bucket, chunkBytes: CARRY_CHUNK_BYTES, stored: progress.stored, nextSeq: progress.nextSeq, complete: progress.complete };
  }

  private opened(a: { instance: string; digest: string }): Open {
    const t = this.open.get(this.key(a));
    if (!t) throw new UnknownTransferError(a.digest, a.instance);
    t.touched = Date.now();
    return t;
  }

  private async chunk(a: Args<"xfer-chunk">): Promise<Reply<"xfer-chunk">> {
    const t = this.opened(a);
    const p = t.progress;
    if (a.seq === p.nextSeq - 1) return { stored: p.stored }; // its reply was lost: already stored
    if (a.seq !== p.nextSeq)
      throw new CotalError("out-of-order", `Expected chunk ${p.nextSeq}, got ${a.seq}.`, {
        remedy: "Run the carry again: it resumes from what the broker stored.",
      });
    const bytes = Buffer.from(a.data, "base64");
    if (p.stored + bytes.length > t.size)
      throw new CotalError("too-many-bytes", `The transfer would exceed the ${t.size} bytes it was begun with.`, {
        remedy: "Run the carry again from the start.",
      });
    const bucket = await this.bucket(a.instance);
    const h = headers();
    h.set(SEQ_HEADER, String(a.seq));
    h.set(STORED_HEADER, String(p.stored + bytes.length));
    try {
      const ack = await this.js.publish(this.subjects(bucket, a.digest).chunks, bytes, { headers: h, expect: { lastSubjectSequence: p.lastStreamSeq } });
      t.progress = { nextSeq: a.seq + 1, stored: p.stored + bytes.length, lastStreamSeq: ack.seq, complete: false };
    } catch (err) {
      // Another upload of the same bytes appended first (or chunks expired): start from what is stored.
      this.open.delete(this.key(a));
      if (isWrongLastSequence(err))
        throw new CotalError("out-of-order", "Another upload of these bytes is storing chunks at the same time.", {
          remedy: "Run the carry again: it resumes from what the broker stored.",
          cause: err,
        });
      throw err;
    }
    return { stored: t.progress.stored };
  }

  private async commit(a: Args<"xfer-commit">): Promise<Reply<"xfer-commit">> {
    const bucket = await this.bucket(a.instance);
    const p = await this.progress(bucket, a.digest, a.size);
    if (p.stored !== a.size)
      throw new CotalError("incomplete", `The broker holds ${p.stored} of ${a.size} bytes of ${a.digest}.`, {
        remedy: "Run the carry again: it sends the rest.",
      });
    if (!p.complete) {
      const s = this.subjects(bucket, a.digest);
      const record = {
        name: a.digest,
        bucket,
        nuid: a.digest.slice("sha256:".length),
        size: a.size,
        chunks: p.nextSeq,
        mtime: new Date().toISOString(),
        digest: `SHA-256=${Buffer.from(a.digest.slice("sha256:".length), "hex").toString("base64url")}=`,
        deleted: false,
        options: { max_chunk_size: CARRY_CHUNK_BYTES },
      };
      const h = headers();
      h.set("Nats-Rollup", "sub");
      await this.js.publish(s.meta, JSON.stringify(record), { headers: h });
    }
    this.open.delete(this.key(a));
    this.log.info({ instance: a.instance, digest: a.digest, size: a.size, chunks: p.nextSeq }, "transfer stored");
    return { bucket, chunks: p.nextSeq, size: a.size };
  }

  private async read(a: Args<"xfer-read">): Promise<Reply<"xfer-read">> {
    const bucket = await this.bucket(a.instance);
    const s = this.subjects(bucket, a.digest);
    const meta = await this.jsm.direct.getMessage(s.stream, { last_by_subj: s.meta }).catch(() => null);
    const record = meta ? (JSON.parse(new TextDecoder().decode(meta.data)) as { size: number; deleted?: boolean }) : undefined;
    if (!record || record.deleted)
      throw new CotalError("unknown-transfer", `No committed transfer of ${a.digest} for ${a.instance}.`, { remedy: "Run the carry again." });
    if (record.size === 0) return { data: "", size: 0 };
    const m = await this.jsm.direct.getMessage(s.stream, { seq: a.cursor ?? 1, next_by_subj: s.chunks });
    if (!m) return { data: "", size: record.size };
    return { data: Buffer.from(m.data).toString("base64"), size: record.size, next: m.seq + 1 };
  }

  private async remove(a: Args<"xfer-remove">): Promise<Reply<"xfer-remove">> {
    const bucket = await this.bucket(a.instance);
    const s = this.subjects(bucket, a.digest);
    const chunks = await this.jsm.streams.purge(s.stream, { filter: s.chunks });
    const meta = await this.jsm.streams.purge(s.stream, { filter: s.meta });
    return { removed: chunks.purged + meta.purged > 0 };
  }
}

// ---- client side ------------------------------------------------------------------------

/** What one upload did. */
export interface UploadResult {
  bucket: string;
  /** Bytes this run sent (0: the broker already held them all). */
  sent: number;
  /** Chunks this run sent. */
  chunks: number;
}

/** Interruptions an upload resumes from by beginning again: the broker still holds what it stored. */
function resumable(err: unknown): boolean {
  return err instanceof MeshServiceUnavailableError || (err instanceof ControlCallError && ["unknown-transfer", "out-of-order"].includes(err.code));
}

/** How often one upload begins again after an interruption before giving up (the user may re-run it). */
const RESUMES = 5;

/**
 * Upload `file` (its `digest` and `size` known) to `instance`'s transfer bucket through the mesh
 * service, resuming after what the broker already stores: no local state. An interruption on the
 * way (the mesh service restarted or did not answer in time, another upload of the same bytes
 * raced it) begins again from what the broker holds, up to RESUMES times; a killed run resumes
 * the same way when it is run again. `onProgress` gets the bytes stored so far after each chunk
 * (and once at each begin).
 */
export async function uploadTransfer(
  party: ControlParty,
  t: { instance: string; file: string; digest: string; size: number },
  onProgress?: (stored: number) => void,
): Promise<UploadResult> {
  let first: number | undefined;
  let chunks = 0;
  for (let attempt = 0; ; attempt++) {
    try {
      const r = await uploadOnce(party, t, (stored, begun) => {
        first ??= begun;
        onProgress?.(stored);
      });
      chunks += r.chunks;
      return { bucket: r.bucket, sent: t.size - (first ?? 0), chunks };
    } catch (err) {
      if (!(err instanceof UploadInterrupted) || attempt >= RESUMES) throw err instanceof UploadInterrupted ? err.cause : err;
      chunks += err.chunks;
      await sleep(250 * (attempt + 1));
    }
  }
}

/** An upload stopped by a resumable interruption after sending `chunks`. */
class UploadInterrupted extends Error {
  constructor(
    readonly chunks: number,
    override readonly cause: unknown,
  ) {
    super("upload interrupted", { cause });
  }
}

async function uploadOnce(
  party: ControlParty,
  t: { instance: string; file: string; digest: string; size: number },
  onProgress: (stored: number, begun: number) => void,
): Promise<UploadResult> {
  const call = { timeoutMs: 30_000 };
  let begun: Reply<"xfer-begin">;
  try {
    begun = await callXfer(party.nc, party.space, "xfer-begin", party.me, { instance: t.instance, digest: t.digest, size: t.size }, call);
  } catch (err) {
    throw resumable(err) ? new UploadInterrupted(0, err) : err;
  }
  onProgress(begun.stored, begun.stored);
  if (begun.complete) return { bucket: begun.bucket, sent: 0, chunks: 0 };
  const buf = Buffer.alloc(Math.min(begun.chunkBytes, carryChunkBytes(party.nc.info?.max_payload)));
  let offset = begun.stored;
  let chunks = 0;
  const fh = await open(t.file, "r");
  try {
    for (let seq = begun.nextSeq; offset < t.size; seq += 1) {
      const { bytesRead } = await fh.read(buf, 0, Math.min(buf.length, t.size - offset), offset);
      if (bytesRead === 0)
        throw new CotalError("file-changed", `${t.file} ended at ${offset} bytes, not ${t.size}: it changed while it was carried.`, {
          remedy: "Run the carry again once the session is idle.",
        });
      const r = await callXfer(
        party.nc,
        party.space,
        "xfer-chunk",
        party.me,
        { instance: t.instance, digest: t.digest, seq, data: buf.subarray(0, bytesRead).toString("base64") },
        call,
      );
      offset = r.stored;
      chunks += 1;
      onProgress(offset, begun.stored);
    }
    await callXfer(party.nc, party.space, "xfer-commit", party.me, { instance: t.instance, digest: t.digest, size: t.size }, call);
  } catch (err) {
    throw resumable(err) ? new UploadInterrupted(chunks, err) : err;
  } finally {
    await fh.close();
  }
  return { bucket: begun.bucket, sent: t.size - begun.stored, chunks };
}

/** Read a committed transfer chunk by chunk (the target manager's side), handing each to `sink` in order. */
export async function readTransfer(
  party: ControlParty,
  t: { instance: string; digest: string },
  sink: (chunk: Buffer) => void | Promise<void>,
): Promise<number> {
  let cursor: number | undefined;
  let received = 0;
  for (;;) {
    const r = await callXfer(party.nc, party.space, "xfer-read", party.me, { ...t, ...(cursor !== undefined ? { cursor } : {}) }, { timeoutMs: 30_000 });
    const bytes = Buffer.from(r.data, "base64");
    if (bytes.length > 0) await sink(bytes);
    received += bytes.length;
    if (received >= r.size || r.next === undefined || bytes.length === 0) return received;
    cursor = r.next;
  }
}

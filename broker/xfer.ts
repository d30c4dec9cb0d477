// Transcript transfer (docs/manager.md "Transcript carry"): the mesh service's `xfer` endpoint.
// It makes the transfer stream of one manager instance, `XFER_<space>_<instance>`, in the data
// account (clients have no JetStream), says which chunks of a transfer it holds, and purges a
// transfer once the manager staged it. The bytes never pass through it: the operator publishes
// each chunk on its own subject into the stream (broker/xfer-upload.ts) and the manager takes
// them as they pass, or from the stream (broker/xfer-receive.ts).
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import { DiscardPolicy, jetstream, jetstreamManager, RetentionPolicy, StorageType, type JetStreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { clusterReplicas, ensureStream } from "./provision.js";
import {
  LOCAL_OWNER,
  CARRY_CHUNK_BYTES,
  CARRY_CHUNK_OVERHEAD,
  CARRY_MAX_BYTES,
  CARRY_TTL_MS,
  CotalError,
  names,
  principalId,
  XFER_COMMANDS,
  xferChunkIndex,
  xferFilter,
  xferObjectFilter,
  type Principal,
  type TableParsedArgs,
  type TableReplyData,
} from "../schemas/index.js";
import { IdentityRegistry } from "./auth/identity-registry.js";
import { SERVICE_PRINCIPALS } from "./auth/permissions.js";
import { checkSender, senderOf } from "./auth/request-info.js";
import { controlCaller, serveControl } from "./control.js";
import { isStreamNotFound } from "./js-errors.js";
import type { Logger } from "./log.js";

type Args<C extends keyof typeof XFER_COMMANDS> = TableParsedArgs<typeof XFER_COMMANDS, C>;
type Reply<C extends keyof typeof XFER_COMMANDS> = TableReplyData<typeof XFER_COMMANDS, C>;

/** A typed caller of the `xfer` commands. */
export const callXfer = controlCaller(XFER_COMMANDS);

/** The chunk size a server of this max payload carries: CARRY_CHUNK_BYTES, less when the max payload is smaller. */
export function carryChunkBytes(maxPayload: number | undefined): number {
  return Math.max(1, Math.min(CARRY_CHUNK_BYTES, (maxPayload ?? 1024 * 1024) - CARRY_CHUNK_OVERHEAD));
}

/** How many chunks of `chunkBytes` a transfer of `size` bytes has (0 for an empty one). */
export function chunkCount(size: number, chunkBytes: number): number {
  return Math.ceil(size / chunkBytes);
}

/** Bytes of chunk `index` of a transfer of `size` bytes: chunkBytes, the last one what is left. */
export function chunkSize(index: number, size: number, chunkBytes: number): number {
  return Math.max(0, Math.min(chunkBytes, size - index * chunkBytes));
}

export interface XferServiceOptions {
  /** Static meshes: only the operator's credential may call (open meshes check nothing). */
  operatorOnly: boolean;
  /** Each stream's byte limit (default CARRY_MAX_BYTES, 256 MiB). */
  maxBytes?: number;
  /** How long a broker copy lives (the stream's max age, default CARRY_TTL_MS). */
  ttlMs?: number;
}

/**
 * The mesh service's side of transcript carry. One stream per manager instance, made on first use
 * in the data account: subjects `cotal.<space>.xfer.<instance>.>`, one message per subject and a
 * second refused (discard new per subject), no rollups, each message at most a chunk, 256 MiB,
 * max age 10 minutes (a stale transfer's chunks expire). A transfer's chunk `i` is the message on
 * `…<instance>.<hex of its sha256>.<i>`, so which chunks the broker holds is read from the
 * stream's subjects alone: an interrupted upload sends only the others, and none is written twice.
 */
export class XferService {
  private readonly streams = new Set<string>();
  private readonly sub: Subscription;
  private readonly chunkBytes: number;

  private constructor(
    nc: NatsConnection,
    private readonly space: string,
    private readonly jsm: JetStreamManager,
    private readonly log: Logger,
    private readonly o: XferServiceOptions,
    private readonly identities: IdentityRegistry | undefined,
    /** A transfer stream's replicas: R3 on a cluster of three or more, as every space stream. */
    private readonly replicas: number,
  ) {
    this.chunkBytes = carryChunkBytes(nc.info?.max_payload);
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
        "xfer-remove": guard((a: Args<"xfer-remove">) => this.remove(a), true),
      },
      log,
      // Static meshes: the caller must be the credential the server says sent the call (request-info.ts).
      identities ? { authenticate: (caller, info) => checkSender(senderOf(info), caller, identities, "transfer transcripts") } : {},
    );
  }

  /** Serve the `xfer` endpoint of `space` on the mesh service's connection (the data account's). */
  static async start(nc: NatsConnection, space: string, log: Logger, o: XferServiceOptions): Promise<XferService> {
    const js = jetstream(nc);
    const identities = o.operatorOnly ? new IdentityRegistry(await new Kvm(js).open(names.membersBucket(space), { bindOnly: true })) : undefined;
    return new XferService(nc, space, await jetstreamManager(nc), log.child({ part: "xfer" }), o, identities, clusterReplicas(nc));
  }

  stop(): void {
    this.sub.unsubscribe();
  }

  /**
   * Static meshes: the operator's credential may do anything here; a manager's credential (profile
   * `manager`) may only remove transfers to the instance named like itself.
   */
  private async authorize(caller: Principal, instance: string, managerMay: boolean): Promise<void> {
    if (!this.o.operatorOnly || principalId(caller) === principalId(SERVICE_PRINCIPALS.cli)) return;
    if (managerMay && caller.owner === LOCAL_OWNER && instance === caller.actor && (await this.identities?.get(caller))?.profile === "manager") return;
    throw new CotalError(
      "not-allowed",
      `Only the mesh host's operator credential may carry transcripts${managerMay ? `, and only manager ${instance}'s own credential may remove what was carried to it` : ""}.`,
      {
        remedy:
          "Run `cotal spawn --resume` on the mesh host, or pass the operator's credential with --creds; a manager on another host runs with --instance set to its credential's name.",
      },
    );
  }

  /** The instance's transfer stream, made (or brought to today's settings) on first use by this service. */
  private async stream(instance: string): Promise<string> {
    const name = names.xferStream(this.space, instance);
    if (this.streams.has(name)) return name;
    await ensureStream(
      this.jsm,
      {
        name,
        subjects: [xferFilter(this.space, instance)],
        description: `transcripts carried to manager ${instance}`,
        retention: RetentionPolicy.Limits,
        storage: StorageType.File,
        num_replicas: this.replicas,
        max_age: (this.o.ttlMs ?? CARRY_TTL_MS) * 1_000_000,
        max_bytes: this.o.maxBytes ?? CARRY_MAX_BYTES,
        max_msg_size: this.chunkBytes + CARRY_CHUNK_OVERHEAD,
        discard: DiscardPolicy.New,
        max_msgs_per_subject: 1,
        discard_new_per_subject: true,
        allow_rollup_hdrs: false,
      },
      { created: [], updated: [], unchanged: [] },
    );
    // The Object Store bucket transfers went to before (base64 through this service): its limit
    // was reserved from the account's storage, and nothing reads it any more.
    await this.jsm.streams.delete(`OBJ_cotal_xfer_${this.space}_${instance}`).catch((err: unknown) => {
      if (!isStreamNotFound(err)) this.log.warn({ err, instance }, "removing the former transfer bucket failed");
    });
    this.streams.add(name);
    return name;
  }

  /** Indexes of the chunks of `digest` the stream holds, from its subjects. */
  private async held(stream: string, instance: string, digest: string): Promise<number[]> {
    const filter = xferObjectFilter(this.space, instance, digest);
    const subjects = (await this.jsm.streams.info(stream, { subjects_filter: filter })).state.subjects ?? {};
    return Object.keys(subjects)
      .map(xferChunkIndex)
      .filter((i): i is number => i !== undefined)
      .sort((a, b) => a - b);
  }

  private async begin(a: Args<"xfer-begin">): Promise<Reply<"xfer-begin">> {
    const stream = await this.stream(a.instance);
    const chunks = chunkCount(a.size, this.chunkBytes);
    const have = (await this.held(stream, a.instance, a.digest)).filter((i) => i < chunks);
    const stored = have.reduce((n, i) => n + chunkSize(i, a.size, this.chunkBytes), 0);
    this.log.info({ instance: a.instance, digest: a.digest, size: a.size, stored }, "transfer begun");
    return { stream, chunkBytes: this.chunkBytes, chunks, have, stored };
  }

  private async remove(a: Args<"xfer-remove">): Promise<Reply<"xfer-remove">> {
    const stream = await this.stream(a.instance);
    const r = await this.jsm.streams.purge(stream, { filter: xferObjectFilter(this.space, a.instance, a.digest) });
    return { removed: r.purged > 0 };
  }
}

import { Kvm } from "@nats-io/kv";
import { Objm } from "@nats-io/obj";
import {
  DiscardPolicy,
  jetstream,
  jetstreamManager,
  type JetStreamApiError,
  RetentionPolicy,
  StorageType,
  type JetStreamManager,
  type StreamConfig,
} from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { z } from "zod";
import { BUCKET_VALUE_BYTES, CARRY_MAX_BYTES, EVENT_PLANE, filters, formatDuration, LIMITS, names, PRESENCE, XFER_TOKEN } from "../schemas/index.js";
import { StorageLimitError, StreamConflictError, type StorageLimit } from "./errors.js";
import { INSUFFICIENT_RESOURCES, isStorageRefusal, isStreamNotFound, MESSAGE_TOO_LARGE } from "./js-errors.js";

/** Knobs of a space's storage; defaults suit one laptop. */
export interface SpaceOptions {
  /**
   * Replicas of every stream and bucket created now. Default: what the server's cluster allows
   * (clusterReplicas): 3 on a cluster of three or more nodes, else 1. Existing streams keep theirs.
   */
  replicas?: number;
  /** JetStream dedupe window for Nats-Msg-Id, ms. Default 2 minutes. */
  duplicateWindowMs?: number;
  /** Storage limits (`cotal up --max-…`); unset fields take STORAGE_DEFAULTS. */
  limits?: Partial<StorageLimits>;
}

/**
 * What one space may store. Every stream refuses new messages when full (discard new): the
 * sender gets a refusal naming the limit and nothing already stored is dropped to make room.
 */
export interface StorageLimits {
  /** Bytes each of CHAT_, DM_, TASK_, SEATS_, EVENTS_ may hold. */
  chatBytes: number;
  dmBytes: number;
  taskBytes: number;
  seatsBytes: number;
  eventsBytes: number;
  /**
   * Posts one sender may keep on one channel (CHAT_'s per-subject limit). The next post is refused
   * (discard new per subject): nothing a member has not read yet is dropped to make room. Posts
   * leave after `chatMaxAgeMs`, so a sender at the limit may post again as its oldest age out.
   */
  chatPerSender: number;
  /** How long a channel post is kept, ms (CHAT_'s max age; 0: for ever). */
  chatMaxAgeMs: number;
  /** Bytes the artifacts Object Store (`cotal_artifacts_<space>`) may hold. */
  artifactsBytes: number;
  /**
   * DMs (and anycasts) one sender may have waiting, unconsumed, for one recipient (role). DM_
   * and TASK_ are work queues: a handed-over, acked message leaves the stream.
   */
  backlogPerSender: number;
}
export const STORAGE_DEFAULTS: StorageLimits = {
  chatBytes: 1024 ** 3,
  dmBytes: 512 * 1024 ** 2,
  taskBytes: 256 * 1024 ** 2,
  seatsBytes: 128 * 1024 ** 2,
  // Every actor's rolling window together; one actor holds at most EVENT_PLANE's 64 MiB. Counted
  // against the data account's 4 GiB with the other stores (JetStream reserves each max_bytes).
  eventsBytes: 256 * 1024 ** 2,
  chatPerSender: 10_000,
  chatMaxAgeMs: 90 * 24 * 3600_000,
  artifactsBytes: 1024 ** 3,
  backlogPerSender: 10_000,
};

/** Storage limits as configuration (`cotal up` flags, mesh.json, `mesh serve --limits`). */
export const StorageLimitsInput = z
  .object({
    chatBytes: z.number().int().positive(),
    dmBytes: z.number().int().positive(),
    taskBytes: z.number().int().positive(),
    seatsBytes: z.number().int().positive(),
    eventsBytes: z.number().int().positive(),
    chatPerSender: z.number().int().positive(),
    chatMaxAgeMs: z.number().int().nonnegative(),
    artifactsBytes: z.number().int().positive(),
    backlogPerSender: z.number().int().positive(),
  })
  .partial()
  .strict();

/** Largest stored message: the envelope limit plus room for headers. */
export const MAX_STORED_MESSAGE_BYTES = LIMITS.maxMessageBytes + 8 * 1024;

/**
 * Replicas for a space's streams on the server `nc` is connected to: 3 when it is part of a
 * cluster of three or more nodes, else 1 (R2 survives no node loss, so it is never chosen). The
 * size comes from the server's INFO: `connect_urls` lists the client URLs of every node it is
 * routed to, itself included; a server outside a cluster sends no `cluster` name.
 */
export function clusterReplicas(nc: NatsConnection): number {
  const info = nc.info;
  if (!info?.cluster) return 1;
  const nodes = new Set(info.connect_urls ?? []).size;
  return nodes >= 3 ? 3 : 1;
}

/** What ensureSpace did to each stream and bucket. */
export interface ProvisionReport {
  created: string[];
  updated: string[];
  unchanged: string[];
}

const nanos = (ms: number) => ms * 1_000_000;

/** The streams of a space (docs/SPEC.md §4), by name. */
export function spaceStreams(space: string, opts: SpaceOptions = {}): Array<Partial<StreamConfig> & { name: string; subjects: string[] }> {
  const limits = { ...STORAGE_DEFAULTS, ...opts.limits };
  const common = {
    storage: StorageType.File,
    num_replicas: opts.replicas ?? 1,
    duplicate_window: nanos(opts.duplicateWindowMs ?? 120_000),
    discard: DiscardPolicy.New,
    max_msg_size: MAX_STORED_MESSAGE_BYTES,
  };
  // One sender cannot fill a recipient's queue: its (recipient, sender) subject is capped.
  const backlog = { max_msgs_per_subject: limits.backlogPerSender, discard_new_per_subject: true };
  return [
    {
      ...common,
      name: names.chatStream(space),
      subjects: [filters.kind(space, "chat")],
      retention: RetentionPolicy.Limits,
      // One sender's posts on one channel: the next one past the limit is refused, never an old one
      // evicted (a durable member once lost posts it had not read yet, without a word).
      max_msgs_per_subject: limits.chatPerSender,
      discard_new_per_subject: true,
      max_age: nanos(limits.chatMaxAgeMs),
      max_bytes: limits.chatBytes,
      allow_direct: true,
      description: "Cotal channel posts",
    },
    {
      ...common,
      name: names.eventsStream(space),
      subjects: [filters.kind(space, "events")],
      retention: RetentionPolicy.Limits,
      // A rolling activity log per actor: its newest frames are kept and the oldest leave (discard
      // old per subject). A frame is small, so one actor's share is bounded by count × size
      // (docs/events.md "Storage"); the stream refuses new frames (discard new) when all of them
      // together are full, except from an actor already at its window, whose frame replaces its own oldest.
      max_msgs_per_subject: EVENT_PLANE.framesPerActor,
      max_msg_size: EVENT_PLANE.maxFrameBytes,
      max_bytes: limits.eventsBytes,
      description: "Cotal event planes (a rolling window of AG-UI frames per actor)",
    },
    {
      ...common,
      name: names.dmStream(space),
      subjects: [filters.kind(space, "inst")],
      retention: RetentionPolicy.Workqueue,
      max_bytes: limits.dmBytes,
      ...backlog,
      allow_direct: false,
      description: "Cotal direct messages (private: no direct get; a handed-over DM leaves the stream)",
    },
    {
      ...common,
      name: names.taskStream(space),
      subjects: [filters.kind(space, "svc")],
      retention: RetentionPolicy.Workqueue,
      max_bytes: limits.taskBytes,
      ...backlog,
      description: "Cotal anycast work queue",
    },
    {
      ...common,
      name: names.seatsStream(space),
      subjects: [filters.kind(space, "seat")],
      retention: RetentionPolicy.Limits,
      max_bytes: limits.seatsBytes,
      description: "Cotal seat history (event-sourced)",
    },
  ];
}

/** A KV bucket of a space: its TTL (0 = keep), history, whether clients write it, and its largest value (-1: unbounded). */
export interface SpaceBucket {
  name: string;
  ttlMs: number;
  history: number;
  clientsWrite: boolean;
  /** The bucket's largest value in bytes, headers included (its stream's `max_msg_size`); reconciled in place. */
  maxValueBytes: number;
}

/**
 * KV buckets of a space. Every bucket someone other than the mesh service writes has a largest
 * value: one peer's record must never be more than a reader can take (two 600 KB
 * presence records once broke the roster for everyone). The members bucket is the mesh service's alone.
 */
export function spaceBuckets(space: string): SpaceBucket[] {
  return [
    { name: names.presenceBucket(space), ttlMs: PRESENCE.livenessMs, history: 1, clientsWrite: true, maxValueBytes: BUCKET_VALUE_BYTES.presence },
    { name: names.channelsBucket(space), ttlMs: 0, history: 5, clientsWrite: false, maxValueBytes: BUCKET_VALUE_BYTES.channels },
    { name: names.membersBucket(space), ttlMs: 0, history: 1, clientsWrite: false, maxValueBytes: -1 },
    { name: names.managersBucket(space), ttlMs: 10_000, history: 1, clientsWrite: true, maxValueBytes: BUCKET_VALUE_BYTES.managers },
  ];
}

/** Fields whose difference would change what the stream means; never changed in place. */
function conflicts(want: Partial<StreamConfig>, have: StreamConfig): string[] {
  const out: string[] = [];
  const ws = [...(want.subjects ?? [])].sort().join(",");
  const hs = [...(have.subjects ?? [])].sort().join(",");
  if (ws !== hs) out.push(`subjects are [${hs}], Cotal needs [${ws}]`);
  if (want.retention !== have.retention) out.push(`retention is ${have.retention}, Cotal needs ${want.retention}`);
  if (want.storage !== have.storage) out.push(`storage is ${have.storage}, Cotal needs ${want.storage}`);
  return out;
}

/** Fields Cotal reconciles in place when they drift. */
const RECONCILED = [
  "max_msgs_per_subject",
  "discard_new_per_subject",
  "max_age",
  "max_bytes",
  "max_msg_size",
  "allow_direct",
  "duplicate_window",
  "discard",
  "description",
  "allow_rollup_hdrs",
] as const;

/** Create stream `want.name`, or reconcile the RECONCILED fields of the one there (a conflict is a StreamConflictError). */
export async function ensureStream(jsm: JetStreamManager, want: Partial<StreamConfig> & { name: string }, report: ProvisionReport): Promise<void> {
  let have: StreamConfig | undefined;
  try {
    have = (await jsm.streams.info(want.name)).config;
  } catch (err) {
    if (!isStreamNotFound(err)) throw err;
  }
  if (!have) {
    await jsm.streams.add(want);
    report.created.push(want.name);
    return;
  }
  const bad = conflicts(want, have);
  if (bad.length) throw new StreamConflictError(want.name, bad);
  const drift = RECONCILED.filter((k) => want[k] !== undefined && want[k] !== have[k]);
  if (drift.length) {
    const patch: Partial<StreamConfig> = {};
    for (const k of drift) Object.assign(patch, { [k]: want[k] });
    await jsm.streams.update(want.name, patch);
    report.updated.push(want.name);
  } else {
    report.unchanged.push(want.name);
  }
}

/**
 * Create or reconcile the streams and KV buckets of a space. Idempotent: a second run changes
 * nothing. A stream whose subjects, retention or storage conflict is reported with what differs
 * and how to fix it (StreamConflictError), never recreated.
 */
export async function ensureSpace(nc: NatsConnection, space: string, opts: SpaceOptions = {}): Promise<ProvisionReport> {
  // Replicas apply to what is created now: a stream created at R1 on one node stays R1 (docs/scaling.md).
  opts = { ...opts, replicas: opts.replicas ?? clusterReplicas(nc) };
  const jsm = await jetstreamManager(nc);
  const report: ProvisionReport = { created: [], updated: [], unchanged: [] };
  for (const stream of spaceStreams(space, opts)) await ensureStream(jsm, stream, report);
  const kvm = new Kvm(nc);
  for (const b of spaceBuckets(space)) {
    const stream = `KV_${b.name}`;
    let exists = true;
    try {
      await jsm.streams.info(stream);
    } catch (err) {
      if (!isStreamNotFound(err)) throw err;
      exists = false;
    }
    if (!exists) {
      await kvm.create(b.name, { history: b.history, replicas: opts.replicas ?? 1, ...(b.ttlMs ? { ttl: b.ttlMs } : {}) });
      report.created.push(b.name);
    }
    const config = (await jsm.streams.info(stream)).config;
    const patch: Partial<StreamConfig> = {};
    // A client's write with `Nats-Rollup: all` on its own key would wipe the whole bucket.
    // Buckets clients write (presence, managers) take no rollups; Cotal never purges them.
    if (b.clientsWrite && config.allow_rollup_hdrs) patch.allow_rollup_hdrs = false;
    // The largest value, set on a mesh provisioned before it had one too (`cotal up` updates in place).
    if ((config.max_msg_size ?? -1) !== b.maxValueBytes) patch.max_msg_size = b.maxValueBytes;
    if (Object.keys(patch).length) {
      await jsm.streams.update(stream, { ...config, ...patch });
      if (exists) report.updated.push(b.name);
    } else if (exists) {
      report.unchanged.push(b.name);
    }
  }
  await ensureArtifacts(nc, jsm, space, opts, report);
  return report;
}

/**
 * The space's artifacts Object Store (file storage, discard new at `artifactsBytes`). Only the
 * mesh service reads and writes it: clients have no JetStream (docs/security.md), so they store
 * and fetch through its `artifact-*` control commands.
 */
async function ensureArtifacts(nc: NatsConnection, jsm: JetStreamManager, space: string, opts: SpaceOptions, report: ProvisionReport): Promise<void> {
  const bucket = names.artifactsBucket(space);
  const maxBytes = { ...STORAGE_DEFAULTS, ...opts.limits }.artifactsBytes;
  let have: StreamConfig | undefined;
  try {
    have = (await jsm.streams.info(`OBJ_${bucket}`)).config;
  } catch (err) {
    if (!isStreamNotFound(err)) throw err;
  }
  if (!have) {
    await new Objm(jetstream(nc)).create(bucket, {
      storage: StorageType.File,
      replicas: opts.replicas ?? 1,
      max_bytes: maxBytes,
      description: "Cotal artifacts (content-addressed by sha256)",
    });
    report.created.push(bucket);
  } else if (have.max_bytes !== maxBytes || have.discard !== DiscardPolicy.New) {
    await jsm.streams.update(`OBJ_${bucket}`, { ...have, max_bytes: maxBytes, discard: DiscardPolicy.New });
    report.updated.push(bucket);
  } else {
    report.unchanged.push(bucket);
  }
}

const mib = (bytes: number) => (bytes >= 1024 ** 3 && bytes % 1024 ** 3 === 0 ? `${bytes / 1024 ** 3} GiB` : `${Math.round(bytes / 1024 ** 2)} MiB`);

/**
 * What a store refusal means, named for a person: which stream or bucket refused a publish on
 * `subject`, which of its limits, that limit's size (configurable limits say their default: a
 * sender cannot read the stream's configuration) and the `cotal up` flag that raises it. The one
 * place JetStream's storage errors are turned into words (a bare "maximum bytes exceeded"
 * named neither the stream nor the limit).
 */
export function storageLimitOf(subject: string, err: JetStreamApiError): StorageLimit {
  const t = subject.split(".");
  const d = STORAGE_DEFAULTS;
  if (t[0] === "$KV") {
    const store = t[1] ?? "a bucket";
    const bound = spaceBuckets(store.replace(/^cotal_[a-z]+_/, "")).find((b) => b.name === store)?.maxValueBytes;
    if (err.code === MESSAGE_TOO_LARGE) return { store, limit: "the largest value it takes", ...(bound && bound > 0 ? { size: `${bound} bytes` } : {}) };
    return { store, limit: "the space's JetStream storage", size: "the data account's disk limit" };
  }
  const space = t[1] ?? "";
  const kind = t[2];
  const byKind: Record<string, { store: string; bytes: number; flag: string; backlog?: boolean }> = {
    chat: { store: `CHAT_${space}`, bytes: d.chatBytes, flag: "--chat-bytes SIZE" },
    inst: { store: `DM_${space}`, bytes: d.dmBytes, flag: "--dm-bytes SIZE", backlog: true },
    svc: { store: `TASK_${space}`, bytes: d.taskBytes, flag: "--task-bytes SIZE", backlog: true },
    seat: { store: `SEATS_${space}`, bytes: d.seatsBytes, flag: "--seat-log-bytes SIZE" },
    events: { store: `EVENTS_${space}`, bytes: d.eventsBytes, flag: "--events-bytes SIZE" },
    // A carried transcript (docs/manager.md): the instance's transfer stream, fixed at 256 MiB.
    [XFER_TOKEN]: { store: `XFER_${space}_${t[3] ?? ""}`, bytes: CARRY_MAX_BYTES, flag: "" },
  };
  const s = byKind[kind ?? ""] ?? { store: `the stream of ${subject}`, bytes: 0, flag: "" };
  if (err.code === MESSAGE_TOO_LARGE)
    return {
      store: s.store,
      limit: "the largest message it stores",
      size: `${kind === "events" ? EVENT_PLANE.maxFrameBytes : MAX_STORED_MESSAGE_BYTES} bytes, headers included`,
    };
  if (err.code === INSUFFICIENT_RESOURCES) return { store: s.store, limit: "the space's JetStream storage", size: "the data account's disk limit" };
  if (s.backlog && /per subject/i.test(err.message))
    return {
      store: s.store,
      limit: "the backlog one sender may have waiting for one recipient",
      size: `${d.backlogPerSender} messages by default`,
      flag: "--dm-backlog N",
    };
  if (kind === "chat" && /per subject/i.test(err.message))
    return {
      store: s.store,
      limit: "the posts one sender may keep on one channel",
      size: `${d.chatPerSender} posts by default, each kept ${formatDuration(d.chatMaxAgeMs)}`,
      flag: "--chat-per-sender N",
      wait: "your oldest posts on this channel age out (--chat-max-age)",
    };
  return { store: s.store, limit: "its byte limit", ...(s.bytes ? { size: `${mib(s.bytes)} by default` } : {}), ...(s.flag ? { flag: s.flag } : {}) };
}

/** A store refusal as the typed error callers test (`instanceof StorageLimitError`), or `err` unchanged. */
export function storageRefusalError(subject: string, err: unknown): unknown {
  return isStorageRefusal(err) ? new StorageLimitError(subject, storageLimitOf(subject, err), err) : err;
}

import { Kvm } from "@nats-io/kv";
import { Objm } from "@nats-io/obj";
import { DiscardPolicy, jetstream, jetstreamManager, RetentionPolicy, StorageType, type JetStreamManager, type StreamConfig } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { z } from "zod";
import { filters, LIMITS, names, PRESENCE } from "../schemas/index.js";
import { StreamConflictError } from "./errors.js";
import { isStreamNotFound } from "./js-errors.js";

/** Knobs of a space's storage; defaults suit one laptop. */
export interface SpaceOptions {
  /**
   * Replicas of every stream and bucket created now. Default: what the server's cluster allows
   * (clusterReplicas): 3 on a cluster of three or more nodes, else 1. Existing streams keep theirs.
   */
  replicas?: number;
  /** Posts kept per channel subject (CHAT_ per-subject cap). Default 1000. */
  chatPerSubject?: number;
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
  /** Bytes each of CHAT_, DM_, TASK_, SEATS_ may hold. */
  chatBytes: number;
  dmBytes: number;
  taskBytes: number;
  seatsBytes: number;
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
      max_msgs_per_subject: opts.chatPerSubject ?? 1000,
      max_bytes: limits.chatBytes,
      allow_direct: true,
      description: "Cotal channel posts",
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

/** KV buckets of a space, with their TTLs (0 = keep). */
export function spaceBuckets(space: string): Array<{ name: string; ttlMs: number; history: number; clientsWrite: boolean }> {
  return [
    { name: names.presenceBucket(space), ttlMs: PRESENCE.livenessMs, history: 1, clientsWrite: true },
    { name: names.channelsBucket(space), ttlMs: 0, history: 5, clientsWrite: false },
    { name: names.membersBucket(space), ttlMs: 0, history: 1, clientsWrite: false },
    { name: names.managersBucket(space), ttlMs: 10_000, history: 1, clientsWrite: true },
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
  "max_bytes",
  "max_msg_size",
  "allow_direct",
  "duplicate_window",
  "discard",
  "description",
  "allow_rollup_hdrs",
] as const;

async function ensureStream(jsm: JetStreamManager, want: Partial<StreamConfig> & { name: string }, report: ProvisionReport) {
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
    // A client's write with `Nats-Rollup: all` on its own key would wipe the whole bucket.
    // Buckets clients write (presence, managers) take no rollups; Cotal never purges them.
    const config = (await jsm.streams.info(stream)).config;
    if (b.clientsWrite && config.allow_rollup_hdrs) {
      await jsm.streams.update(stream, { ...config, allow_rollup_hdrs: false });
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

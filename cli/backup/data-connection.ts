// The space's data account, reached from the mesh host: where every stream, bucket and object
// store of a space lives. `cotal backup` and `cotal restore` read and write it whole, which no
// client credential may (clients reach only what their account imports; docs/security.md).
import { rmSync } from "node:fs";
import { join } from "node:path";
import { jetstreamManager, type JetStreamManager, type StreamInfo } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { AuthStore, backupCreds, connectMesh, writeSecret } from "../../broker/index.js";
import { names } from "../../schemas/index.js";
import { CommandFailedError } from "../terminal/errors.js";
import type { MeshInfo, MeshRoot } from "../mesh-host/mesh-root.js";

/**
 * Run `fn` on a connection to the space's data account: on a static mesh as a one-run credential
 * signed with the data account's key from the mesh host's auth store (backupCreds; written 0600
 * beside the service credentials for the connection, removed after), on an open mesh without one.
 */
export async function withDataAccount<T>(root: MeshRoot, info: MeshInfo, fn: (nc: NatsConnection, jsm: JetStreamManager) => Promise<T>): Promise<T> {
  let creds: string | undefined;
  if (info.mode === "static") {
    const store = AuthStore.existing(root.authDir);
    if (!store) {
      throw new CommandFailedError(`${root.authDir} holds no auth store, so the space's data account cannot be reached from here.`, {
        remedy: "Run this on the mesh host, in the folder where `cotal up` was run.",
      });
    }
    creds = join(root.authDir, "creds", info.space, "backup.creds");
    writeSecret(creds, await backupCreds(store, info.space));
  }
  try {
    const nc = await connectMesh({ server: info.server, creds, name: "cotal-backup" });
    try {
      return await fn(nc, await jetstreamManager(nc));
    } finally {
      await nc.close().catch(() => undefined);
    }
  } finally {
    if (creds) rmSync(creds, { force: true });
  }
}

/**
 * Whether stream `name` belongs to `space` on an open mesh, where every space shares one account:
 * its streams (CHAT_, DM_, …, and each manager instance's transfer stream XFER_<space>_<instance>),
 * buckets (KV_cotal_<kind>_<space>) and the artifacts object store.
 */
function isSpaceStream(space: string, name: string): boolean {
  const exact = [
    names.chatStream(space),
    names.dmStream(space),
    names.taskStream(space),
    names.seatsStream(space),
    names.eventsStream(space),
    ...[names.presenceBucket(space), names.channelsBucket(space), names.membersBucket(space), names.managersBucket(space)].map((b) => `KV_${b}`),
    `OBJ_${names.artifactsBucket(space)}`,
  ];
  return exact.includes(name) || name.startsWith(names.xferStream(space, "x").slice(0, -1));
}

/**
 * The streams of the space, with their state, by name. On a static mesh that is every stream of
 * the data account (the account is the space's alone, so a stream kind added later is never
 * missed); on an open mesh the streams named for the space.
 */
export async function listSpaceStreams(jsm: JetStreamManager, info: Pick<MeshInfo, "space" | "mode">): Promise<StreamInfo[]> {
  const out: StreamInfo[] = [];
  for await (const si of jsm.streams.list()) if (info.mode === "static" || isSpaceStream(info.space, si.config.name)) out.push(si);
  return out.sort((a, b) => a.config.name.localeCompare(b.config.name));
}

import type { StreamConfig, StreamInfo, StreamState } from "@nats-io/jetstream";
import { createInbox, type Msg, type NatsConnection } from "@nats-io/transport-node";
import { CotalError, JS_API } from "../schemas/index.js";

/**
 * JetStream's own stream snapshot and restore (the `$JS.API.STREAM.SNAPSHOT/RESTORE` API that
 * `nats stream backup/restore` uses), which the v3 client does not wrap. A snapshot is the stream's
 * store as the server packs it (messages, and its consumers with their delivery state): bytes
 * Cotal keeps without reading them, and gives back to a server to restore the stream as it was.
 *
 * Snapshot: the request names an inbox; the server answers with the stream's configuration and
 * state, then sends the packed store to the inbox in chunks, each with a reply the client
 * publishes to once it has the chunk (the server pauses when too much is unacknowledged), and
 * ends with an empty message (a status header on it is an error).
 * Restore: the request carries the configuration and state; the server answers with a subject to
 * which the client sends the chunks as requests (each answered when stored) and then an empty
 * request, answered when the stream is restored, with its info or an error.
 */

/** What a snapshot starts with: the stream's configuration and state when it was taken. */
export interface StreamSnapshotMeta {
  config: StreamConfig;
  state: StreamState;
}

/** A snapshot could not be taken or did not arrive whole. */
export class StreamSnapshotError extends CotalError {
  constructor(
    readonly stream: string,
    detail: string,
    cause?: unknown,
  ) {
    super("snapshot-failed", `The snapshot of stream ${stream} failed: ${detail}.`, {
      remedy: "See the nats-server log; check the disk it writes to and run the backup again (a partial backup has no manifest and is never restored).",
      cause,
    });
  }
}

/** The server did not restore a stream from its snapshot. */
export class StreamRestoreError extends CotalError {
  constructor(
    readonly stream: string,
    detail: string,
    cause?: unknown,
  ) {
    super("restore-failed", `Restoring stream ${stream} failed: ${detail}.`, {
      remedy: "See the nats-server log (the account's JetStream storage must hold the stream, and the stream must not exist yet), then run the restore again.",
      cause,
    });
  }
}

/** Bytes per chunk both ways: well inside a server's default 1 MiB max_payload. */
export const SNAPSHOT_CHUNK_BYTES = 128 * 1024;

/** How long a snapshot may go without a chunk, and a restore without an answer to one, ms. */
const IDLE_MS = 30_000;

interface ApiReply {
  error?: { code?: number; err_code?: number; description?: string };
}

const enc = new TextEncoder();
const dec = new TextDecoder();

function parseReply<T>(m: Msg, onError: (detail: string) => Error): T & ApiReply {
  let body: T & ApiReply;
  try {
    body = JSON.parse(dec.decode(m.data)) as T & ApiReply;
  } catch {
    throw onError(`the server's answer is not JSON (${JSON.stringify(dec.decode(m.data).slice(0, 80))})`);
  }
  if (body.error) throw onError(`${body.error.description ?? "error"} (JetStream error ${body.error.err_code ?? body.error.code ?? "?"})`);
  return body;
}

/**
 * Take a snapshot of `stream`, consumers included, handing each chunk to `write` in order (the
 * next chunk is acknowledged only after `write` resolved). Resolves with the configuration and
 * state the restore needs. `onChunk` is told the bytes of each chunk written.
 */
export async function snapshotStream(
  nc: NatsConnection,
  stream: string,
  write: (chunk: Uint8Array) => Promise<void>,
  opts: { onChunk?: (bytes: number) => void; chunkBytes?: number } = {},
): Promise<StreamSnapshotMeta> {
  const fail = (detail: string, cause?: unknown) => new StreamSnapshotError(stream, detail, cause);
  const inbox = createInbox();
  const sub = nc.subscribe(inbox);
  try {
    let meta: StreamSnapshotMeta;
    try {
      const req = { deliver_subject: inbox, no_consumers: false, chunk_size: opts.chunkBytes ?? SNAPSHOT_CHUNK_BYTES };
      const r = await nc.request(`${JS_API}.STREAM.SNAPSHOT.${stream}`, enc.encode(JSON.stringify(req)), { timeout: IDLE_MS });
      const body = parseReply<Partial<StreamSnapshotMeta>>(r, (d) => fail(d));
      if (!body.config || !body.state) throw fail("the server's answer has no configuration or state");
      meta = { config: body.config, state: body.state };
    } catch (err) {
      if (err instanceof StreamSnapshotError) throw err;
      throw fail((err as Error).message, err);
    }
    const it = sub[Symbol.asyncIterator]();
    for (;;) {
      let timer: NodeJS.Timeout | undefined;
      const idle = new Promise<"idle">((resolve) => (timer = setTimeout(() => resolve("idle"), IDLE_MS)));
      const next = await Promise.race([it.next(), idle]).finally(() => clearTimeout(timer));
      if (next === "idle") throw fail(`no data arrived for ${IDLE_MS / 1000} s`);
      if (next.done) throw fail("the subscription closed before the snapshot ended");
      const m = next.value;
      if (m.data.length === 0) {
        // The end; a status on it says the server gave up (no flow response, no interest, an error).
        if (m.headers && m.headers.code >= 400) throw fail(`the server ended it with ${m.headers.code} ${m.headers.description}`.trim());
        return meta;
      }
      await write(m.data);
      opts.onChunk?.(m.data.length);
      if (m.reply) m.respond();
    }
  } finally {
    sub.unsubscribe();
  }
}

/**
 * Restore a stream from a snapshot: `meta` as snapshotStream gave it (its `config` may be adjusted,
 * e.g. the replicas), `chunks` the snapshot's bytes in order. The stream must not exist. Resolves
 * with the restored stream's info once the server has rebuilt it.
 */
export async function restoreStream(
  nc: NatsConnection,
  meta: StreamSnapshotMeta,
  chunks: AsyncIterable<Uint8Array>,
  opts: { onChunk?: (bytes: number) => void; chunkBytes?: number; finishTimeoutMs?: number } = {},
): Promise<StreamInfo> {
  const stream = meta.config.name;
  const fail = (detail: string, cause?: unknown) => new StreamRestoreError(stream, detail, cause);
  const size = Math.min(opts.chunkBytes ?? SNAPSHOT_CHUNK_BYTES, (nc.info?.max_payload ?? 1024 * 1024) - 1024);
  let deliver: string;
  try {
    const r = await nc.request(`${JS_API}.STREAM.RESTORE.${stream}`, enc.encode(JSON.stringify(meta)), { timeout: IDLE_MS });
    const body = parseReply<{ deliver_subject?: string }>(r, (d) => fail(d));
    if (!body.deliver_subject) throw fail("the server's answer names no subject to send the snapshot to");
    deliver = body.deliver_subject;
  } catch (err) {
    if (err instanceof StreamRestoreError) throw err;
    throw fail((err as Error).message, err);
  }
  const send = async (bytes: Uint8Array, timeout: number): Promise<Msg> => {
    try {
      return await nc.request(deliver, bytes, { timeout });
    } catch (err) {
      throw fail((err as Error).message, err);
    }
  };
  for await (const block of chunks) {
    for (let off = 0; off < block.length; off += size) {
      const part = block.subarray(off, Math.min(off + size, block.length));
      const ack = await send(part, IDLE_MS);
      // Each chunk is answered with nothing when stored; anything else is the server's refusal.
      if (ack.data.length) {
        const text = dec.decode(ack.data);
        if (text.startsWith("-ERR")) throw fail(text.replace(/^-ERR\s*/, ""));
        parseReply<object>(ack, (d) => fail(d));
      }
      opts.onChunk?.(part.length);
    }
  }
  const done = await send(new Uint8Array(0), opts.finishTimeoutMs ?? 10 * 60_000);
  const body = parseReply<Partial<StreamInfo>>(done, (d) => fail(d));
  if (!body.config || !body.state) throw fail("the server's answer has no stream info");
  return body as StreamInfo;
}

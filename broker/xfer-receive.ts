// Transcript carry, the target manager's side (docs/manager.md "Transcript carry"): take the
// chunks of one transfer as the operator publishes them (a live subscription on their subjects),
// hashing each into a 0600 file in order; at the end read from the instance's transfer stream only
// the chunks not seen pass (a resumed upload's earlier ones, a manager restarted meanwhile). The
// bytes are hashed once, on the way in: nothing is read back to verify them.
import { createHash } from "node:crypto";
import { closeSync, openSync, rmSync, write } from "node:fs";
import { jetstreamManager, type JetStreamManager, type StoredMsg } from "@nats-io/jetstream";
import type { Msg, NatsConnection, Subscription } from "@nats-io/transport-node";
import { CotalError, names, xferChunkIndex, xferChunkSubject, xferObjectFilter } from "../schemas/index.js";
import { JS_OPTIONS } from "./js-access.js";
import { isNoMessageFound, isPermissionDenied, isStreamNotFound } from "./js-errors.js";
import type { Logger } from "./log.js";

/** How many chunks are read from the stream at once (each is at most a chunk, about 1 MiB). */
const READ_WINDOW = 4;

export interface ReceiverOptions {
  /** The manager's connection: the live subscription, on the connection that serves its rail. */
  nc: NatsConnection;
  /** Its JetStream connection (jetStreamConnection): stream reads of what did not pass live. */
  js: NatsConnection;
  space: string;
  instance: string;
  digest: string;
  size: number;
  /** Created exclusively, 0600; removed by abort(). */
  file: string;
  log: Logger;
}

/** What a receiver got: the sha256 and size of the bytes it wrote, in chunk order. */
export interface Received {
  digest: string;
  size: number;
  /** Bytes taken as they passed (the rest were read from the stream). */
  live: number;
}

/** Chunks of the transfer the stream does not hold (expired, or removed by another commit). */
export class TransferIncompleteError extends CotalError {
  constructor(digest: string, index: number, size: number, got: number) {
    super("incomplete", `The broker holds no chunk ${index} of ${digest} (${got} of ${size} bytes received): it expired or was removed.`, {
      remedy: "Run the carry again: it sends what the broker lacks.",
    });
  }
}

/**
 * Receives one transfer into `file`. Chunks are taken in index order only: one arriving out of
 * turn (a resumed upload whose earlier chunks passed before this receiver began) is left for
 * finish() to read from the stream. Nothing past the announced size is written.
 */
export class TransferReceiver {
  private readonly hash = createHash("sha256");
  private readonly fd: number;
  private readonly sub: Subscription;
  private next = 0;
  private written = 0;
  /** Bytes of every chunk but the last, once a chunk that is not the last was taken. */
  private chunkBytes = 0;
  private live = 0;
  private closed = false;
  private lastTaken = Date.now();
  /** Writes under way (positional, on libuv's pool, so the connection's reading is not held up by the disk). */
  private readonly writing = new Set<Promise<void>>();
  private writeError: unknown;

  constructor(private readonly o: ReceiverOptions) {
    this.fd = openSync(o.file, "wx", 0o600);
    this.sub = o.nc.subscribe(xferObjectFilter(o.space, o.instance, o.digest), {
      callback: (err, m) => {
        if (err) o.log.warn({ err, digest: o.digest }, "the live subscription to the transfer ended; what did not pass is read from the stream");
        else this.take(m, true);
      },
    });
  }

  /** When a chunk was last taken (or the receiver began), Unix ms. */
  get active(): number {
    return this.lastTaken;
  }

  /** The file the bytes are written to. */
  get file(): string {
    return this.o.file;
  }

  /** Append chunk `m` if it is the next one and fits the announced size; false when it is not taken. */
  private take(m: Pick<Msg, "subject" | "data">, live: boolean): boolean {
    if (this.closed || xferChunkIndex(m.subject) !== this.next || this.written + m.data.length > this.o.size) return false;
    this.hash.update(m.data);
    this.write(m.data, this.written);
    this.written += m.data.length;
    if (this.written < this.o.size) this.chunkBytes ||= m.data.length;
    if (live) this.live += m.data.length;
    this.next += 1;
    this.lastTaken = Date.now();
    return true;
  }

  private write(data: Uint8Array, position: number): void {
    const done = new Promise<void>((resolve) =>
      write(this.fd, data, 0, data.length, position, (err) => {
        if (err) this.writeError ??= err;
        resolve();
      }),
    );
    this.writing.add(done);
    void done.then(() => this.writing.delete(done));
  }

  /** Every write done (the fd may be closed then); the first write error, if any. */
  private async settled(): Promise<void> {
    while (this.writing.size) await Promise.all(this.writing);
    if (this.writeError) throw this.writeError;
  }

  /**
   * Stop taking chunks as they pass, read the rest from the stream in order, close the file, and
   * say what was written (the caller compares it with the announced digest and size).
   */
  async finish(): Promise<Received> {
    this.sub.unsubscribe();
    try {
      if (this.written < this.o.size) await this.readRest(await jetstreamManager(this.o.js, JS_OPTIONS));
      await this.settled();
    } finally {
      await this.close();
    }
    return { digest: `sha256:${this.hash.digest("hex")}`, size: this.written, live: this.live };
  }

  /**
   * Read chunks `next`… from the stream, READ_WINDOW at a time once the chunk size is known (the
   * length of a chunk that is not the last), in order, until the announced size is written.
   */
  private async readRest(jsm: JetStreamManager): Promise<void> {
    const stream = names.xferStream(this.o.space, this.o.instance);
    const get = async (index: number): Promise<Pick<Msg, "subject" | "data">> => {
      const subject = xferChunkSubject(this.o.space, this.o.instance, this.o.digest, index);
      let m: StoredMsg | null;
      try {
        m = await jsm.streams.getMessage(stream, { last_by_subj: subject });
      } catch (err) {
        if (isNoMessageFound(err) || isStreamNotFound(err)) m = null;
        else if (isPermissionDenied(err))
          throw new CotalError("not-allowed", `This manager's credential may not read the transfers carried to ${this.o.instance}.`, {
            remedy: `Mint its credential again (\`cotal mint ${this.o.instance} --profile manager\`): one minted by an older Cotal lacks the right.`,
            cause: err,
          });
        else throw err;
      }
      if (!m) throw new TransferIncompleteError(this.o.digest, index, this.o.size, this.written);
      return { subject, data: m.data };
    };
    const pending = new Map<number, Promise<Pick<Msg, "subject" | "data">>>();
    let asked = this.next;
    try {
      while (this.written < this.o.size) {
        const last = this.chunkBytes ? Math.ceil(this.o.size / this.chunkBytes) - 1 : this.next;
        for (; asked <= Math.min(last, this.next + READ_WINDOW - 1); asked++) {
          const p = get(asked);
          p.catch(() => undefined); // taken in its turn below
          pending.set(asked, p);
        }
        const index = this.next;
        const m = await pending.get(index)!;
        pending.delete(index);
        if (!this.take(m, false)) throw new TransferIncompleteError(this.o.digest, index, this.o.size, this.written);
      }
    } finally {
      await Promise.allSettled(pending.values());
    }
  }

  /** Close the file once no write is under way (a closed fd's number may be another file's). */
  private async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.settled().catch(() => undefined);
    closeSync(this.fd);
  }

  /** Stop, close and remove the file (an abandoned or refused transfer). */
  async abort(): Promise<void> {
    this.sub.unsubscribe();
    await this.close();
    rmSync(this.o.file, { force: true });
  }
}

import { renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { takeLockFile } from "../../broker/index.js";
import { CommandFailedError } from "../terminal/errors.js";
import { isRunning, ProcessRecord, readRecordFile, recordOf, removeRecord } from "./pid-file.js";

/** The record a lock file holds, if it is one (a half-written or foreign file is not). */
function recordIn<T extends ProcessRecord>(content: string, schema: z.ZodType<T>): T | undefined {
  try {
    const r = schema.safeParse(JSON.parse(content));
    return r.success ? r.data : undefined;
  } catch {
    return undefined;
  }
}

/** A lock file's holder lives: same pid, same start time; undefined when the file names none. */
function holderAlive(schema: z.ZodType<ProcessRecord>): (content: string) => boolean | undefined {
  return (content) => {
    const holder = recordIn(content, schema);
    return holder ? isRunning(holder) : undefined;
  };
}

/**
 * A lock file so two `cotal up` / `cotal down` runs in one mesh root never race (two servers,
 * or a stop during a start). The file records the holder's pid and start time; a lock whose
 * holder is gone is taken over (broker's takeLockFile).
 */
export function acquireLock(file: string, what: string): () => void {
  const take = takeLockFile(file, { content: JSON.stringify(recordOf(process.pid, process.argv)) + "\n", holderAlive: holderAlive(ProcessRecord) });
  if (take.taken) return take.release;
  const holder = take.holder === undefined ? undefined : recordIn(take.holder, ProcessRecord);
  throw new CommandFailedError(`Another cotal command (pid ${holder?.pid ?? "unknown"}) is ${what} this mesh right now.`, {
    remedy: "Wait for it to finish, then run the command again.",
  });
}

/**
 * The lock that keeps one nats-server per JetStream store (two servers on one store lost
 * acknowledged messages). `<store>/cotal-nats-server.lock` names the nats-server that uses the
 * store, by pid AND start time, and the mesh root that started it. It is held for the server's
 * whole life: the lock is stale exactly when that process is gone (or its pid was reused), so
 * a crash never leaves a store locked, and a lost pid file never hides the running server.
 *
 * Why a file naming the process rather than an OS lock: Node has no flock(2), and the holder
 * must be nats-server itself, which takes no lock of its own on the store (2.9); a lock held by
 * `cotal up` would end with `cotal up --detach`. The pid + start time check is the one the pid
 * files already use, so there is nothing new to trust.
 */
export const StoreLockRecord = ProcessRecord.extend({
  /** The `.cotal` folder of the mesh whose server this is. */
  meshRoot: z.string().min(1),
});
export type StoreLockRecord = z.infer<typeof StoreLockRecord>;

export function storeLockFile(storeDir: string): string {
  return join(storeDir, "cotal-nats-server.lock");
}

/** Another nats-server (or a `cotal up` starting one) holds the store. */
export class StoreInUseError extends CommandFailedError {
  constructor(storeDir: string, holder: StoreLockRecord | undefined) {
    super(
      holder
        ? `The JetStream store ${storeDir} is in use by process ${holder.pid} (${holder.command[0] ?? "?"}) of the mesh in ${holder.meshRoot}; a second nats-server on one store loses acknowledged messages.`
        : `The JetStream store ${storeDir} is being claimed by another cotal command right now.`,
      { remedy: "Stop that mesh first (`cotal down` in its project folder), or give this one another --store-dir." },
    );
  }
}

/** The live holder of a store's lock, or undefined when it is free (no lock, or a stale one). */
export function storeLockHolder(storeDir: string): StoreLockRecord | undefined {
  const r = readRecordFile(storeLockFile(storeDir), StoreLockRecord);
  return r.kind === "ok" && isRunning(r.record) ? r.record : undefined;
}

/** A store claimed for a server that is about to start. */
export interface StoreClaim {
  /** Hand the lock to the server process (call as soon as its pid is known). */
  handTo(server: ProcessRecord): void;
  /** Give the claim up (the server did not start). */
  release(): void;
}

/**
 * Claim a store before starting nats-server on it: created exclusively (O_EXCL), naming this
 * process until `handTo` names the server. A live holder is refused with StoreInUseError; a
 * stale lock (holder gone) is taken over.
 */
export function claimStore(storeDir: string, meshRoot: string): StoreClaim {
  const file = storeLockFile(storeDir);
  const mine: StoreLockRecord = { ...recordOf(process.pid, process.argv), meshRoot };
  const take = takeLockFile(file, { content: JSON.stringify(mine) + "\n", holderAlive: holderAlive(StoreLockRecord) });
  if (!take.taken) throw new StoreInUseError(storeDir, take.holder === undefined ? undefined : recordIn(take.holder, StoreLockRecord));
  let current: ProcessRecord = mine;
  return {
    handTo(server) {
      const next: StoreLockRecord = { ...server, meshRoot };
      const tmp = `${file}.${process.pid}.tmp`;
      writeFileSync(tmp, JSON.stringify(next) + "\n", { mode: 0o600 });
      renameSync(tmp, file);
      current = server;
    },
    release() {
      const now = readRecordFile(file, StoreLockRecord);
      if (now.kind === "ok" && now.record.pid === current.pid && now.record.startTime === current.startTime) removeRecord(file);
    },
  };
}

/** Remove a store's lock once its server is gone (a live holder's lock is left alone). */
export function releaseStaleStore(storeDir: string): void {
  const file = storeLockFile(storeDir);
  const r = readRecordFile(file, StoreLockRecord);
  if (r.kind === "ok" && !isRunning(r.record)) removeRecord(file);
}

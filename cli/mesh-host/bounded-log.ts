import { closeSync, copyFileSync, existsSync, fstatSync, ftruncateSync, openSync, renameSync, writeSync } from "node:fs";

/** How large the logs of the processes `cotal up` starts may grow (docs/cli.md, `cotal logs`). */
export interface LogBounds {
  /** Largest size of one file, bytes: past it the file is rotated. */
  maxBytes: number;
  /** Rotated files kept beside the current one (`<name>.log.1` newest … `<name>.log.<keep>`). */
  keep: number;
}

/**
 * The bound of each log of `.cotal/logs/`: 10 MiB a file, the current one and 4 rotated, so at
 * most 50 MiB a process (a flood's warnings are sampled besides: broker/log-sampler.ts). The same
 * numbers go to nats-server (`logfile_size_limit`, `logfile_max_num`: 5 files in all).
 */
export const LOG_BOUNDS: LogBounds = { maxBytes: 10 * 1024 * 1024, keep: 4 };

/**
 * A log file of bounded size that pino writes to, synchronously (as its stderr destination
 * does): when a line would take the file past `maxBytes`, the file is copied to `<path>.1` (older
 * copies shift to `.2` … and the oldest is removed) and then truncated in place.
 *
 * Copy and truncate, not rename (what logrotate calls copytruncate): the process's own stdout and
 * stderr, and anything that inherited them, point at this same file (a crash's stack trace, Node's
 * warnings). After a rename they would write on into a rotated file, and once that was removed,
 * into space never given back; appending to the truncated file, every writer stays within the bound.
 * A line written by another writer between the copy and the truncation is lost.
 */
export class BoundedLogFile {
  private readonly fd: number;
  /** Bytes in the file, as far as this writer knows (others append too: checked before rotating). */
  private size: number;

  constructor(
    readonly path: string,
    private readonly bounds: LogBounds = LOG_BOUNDS,
  ) {
    this.fd = openSync(path, "a", 0o600);
    this.size = fstatSync(this.fd).size;
  }

  write(line: string): boolean {
    const buf = Buffer.from(line);
    if (this.size + buf.length > this.bounds.maxBytes) this.rotateIfFull(buf.length);
    for (let off = 0; off < buf.length;) off += writeSync(this.fd, buf, off);
    this.size += buf.length;
    return true;
  }

  close(): void {
    closeSync(this.fd);
  }

  private rotateIfFull(adding: number): void {
    this.size = fstatSync(this.fd).size;
    if (this.size + adding <= this.bounds.maxBytes || this.size === 0) return;
    for (let i = this.bounds.keep - 1; i >= 1; i--) {
      if (existsSync(`${this.path}.${i}`)) renameSync(`${this.path}.${i}`, `${this.path}.${i + 1}`);
    }
    if (this.bounds.keep > 0) copyFileSync(this.path, `${this.path}.1`);
    ftruncateSync(this.fd, 0);
    this.size = 0;
  }
}

/** The variable `cotal up` names a service's log file in (read once, and kept from the service's own children). */
export const LOG_FILE_ENV = "COTAL_SERVICE_LOG_FILE";
/** A smaller `maxBytes` for the node services' logs, in bytes (tests; `cotal up` passes it on). */
export const LOG_MAX_BYTES_ENV = "COTAL_LOG_MAX_BYTES";

let fromEnv: BoundedLogFile | null | undefined;

/**
 * The bounded log file this process was told to write to (COTAL_SERVICE_LOG_FILE, set by `cotal up` for
 * the processes it starts), or undefined. The variable is removed from the environment on first
 * read: a seat or any other child of this process must never write into its parent's log.
 */
export function boundedLogFromEnv(env: NodeJS.ProcessEnv = process.env): BoundedLogFile | undefined {
  if (fromEnv === undefined) {
    const path = env[LOG_FILE_ENV];
    delete env[LOG_FILE_ENV];
    const max = Number(env[LOG_MAX_BYTES_ENV]);
    fromEnv = path ? new BoundedLogFile(path, max > 0 ? { ...LOG_BOUNDS, maxBytes: max } : LOG_BOUNDS) : null;
  }
  return fromEnv ?? undefined;
}

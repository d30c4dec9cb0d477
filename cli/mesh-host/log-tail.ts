import { closeSync, fstatSync, openSync, readSync, statSync } from "node:fs";

/**
 * What a log file gained since the last read, across the two ways its writer rotates it. The file
 * is held open, so a file renamed away (nats-server's rotation, to `<file>.<timestamp>`) is read to
 * its end before the new one at the path is read from its start; a file truncated in place (the
 * node services' copy-and-truncate, cli/mesh-host/bounded-log.ts) has the rest of what it held in `<file>.1`,
 * which is read from the old offset first.
 */
export class LogTail {
  private held?: { fd: number; ino: number };

  constructor(
    readonly path: string,
    /** Bytes of the file already shown. */
    private offset = 0,
  ) {}

  /** Text added since the last read (empty while the file does not exist). */
  read(): string {
    let text = "";
    if (!this.held && !this.open()) return "";
    const held = this.held!;
    if (fstatSync(held.fd).size < this.offset) {
      // Truncated in place: the copy holds what came after our offset.
      text += readRange(`${this.path}.1`, this.offset);
      this.offset = 0;
    }
    text += this.drain();
    let now: number | undefined;
    try {
      now = statSync(this.path).ino;
    } catch {
      return text; // renamed away, the new one not there yet
    }
    if (now !== held.ino) {
      closeSync(held.fd);
      this.held = undefined;
      this.offset = 0;
      if (this.open()) text += this.drain();
    }
    return text;
  }

  close(): void {
    if (this.held) closeSync(this.held.fd);
    this.held = undefined;
  }

  private open(): boolean {
    try {
      const fd = openSync(this.path, "r");
      this.held = { fd, ino: fstatSync(fd).ino };
      return true;
    } catch {
      return false;
    }
  }

  private drain(): string {
    const { text, end } = readRest(this.held!.fd, this.offset);
    this.offset = end;
    return text;
  }
}

/** The bytes of an open file from `offset` to its end, as text, and the offset read up to. */
function readRest(fd: number, offset: number): { text: string; end: number } {
  const size = fstatSync(fd).size;
  if (size <= offset) return { text: "", end: offset };
  const buf = Buffer.alloc(size - offset);
  const n = readSync(fd, buf, 0, buf.length, offset);
  return { text: buf.subarray(0, n).toString("utf8"), end: offset + n };
}

/** The bytes of `file` from `offset` to its end, as text; empty when it is missing or shorter. */
function readRange(file: string, offset: number): string {
  let fd: number;
  try {
    fd = openSync(file, "r");
  } catch {
    return "";
  }
  try {
    return readRest(fd, offset).text;
  } finally {
    closeSync(fd);
  }
}

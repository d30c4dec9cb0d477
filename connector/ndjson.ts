// Newline-delimited JSON framing of the hook socket, both ends: the connector reads requests and
// confirmations with it, the hook reads replies. One splitter and one limit (MAX_FRAME_BYTES),
// so neither side accepts a frame the other would refuse. Node built-ins only: the hook loads it.
import { MAX_FRAME_BYTES } from "./protocol.js";

/**
 * Splits decoded text into lines (without their newline). A frame longer than `maxChars`,
 * newline included, or an unterminated remainder past it, is an overflow: the caller drops the
 * connection, since the peer is not speaking the protocol.
 */
export class LineSplitter {
  private buf = "";
  constructor(private readonly maxChars = MAX_FRAME_BYTES) {}

  /** Feed a chunk; returns the complete lines it finished, or "overflow". */
  push(chunk: string): string[] | "overflow" {
    this.buf += chunk;
    if (this.buf.length <= this.maxChars && !chunk.includes("\n")) return [];
    const lines: string[] = [];
    let nl: number;
    while ((nl = this.buf.indexOf("\n")) >= 0) {
      if (nl + 1 > this.maxChars) return "overflow";
      lines.push(this.buf.slice(0, nl));
      this.buf = this.buf.slice(nl + 1);
    }
    return this.buf.length > this.maxChars ? "overflow" : lines;
  }
}

/** One frame on the wire: the JSON text and its newline. */
export function frameLine(value: unknown): string {
  return JSON.stringify(value) + "\n";
}

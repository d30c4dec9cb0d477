// What the broker sends a connection, sorted before any subscription sees it: JetStream's own
// status messages for a pull (no payload: `100 Idle Heartbeat` while a pull waits, `408 Request
// Timeout` when it expires and is renewed) apart from everything else (presence, beats,
// messages, replies). The benches and the idle-member test use it to say which is which.
import type { NatsConnection } from "@nats-io/transport-node";

/** One message a tapped connection received. */
export interface Heard {
  subject: string;
  /** The status of a header-only message (`100 Idle Heartbeat`, `408 Request Timeout`, …); absent for anything with a payload or no status. */
  status?: string;
}

/** Counts of a tapped connection; with `keep`, `heard` holds each message (the caller empties it). */
export interface WireTap {
  /** Pull keepalives: header-only `100` and `408` statuses. */
  keepalives: number;
  /** Everything else. */
  other: number;
  /** With `keep`: every message since the caller last emptied it, in arrival order. */
  heard: Heard[];
  /** Stop counting (the connection's handler is as before: a tap costs a little per message). */
  stop(): void;
}

const KEEPALIVE = /^(100|408)\b/;
const decoder = new TextDecoder();

/** A JetStream pull keepalive (idle heartbeat or expiry), which carries no payload and no peer's word. */
export const isKeepalive = (h: Heard): boolean => h.status !== undefined && KEEPALIVE.test(h.status);

/**
 * Tap `nc`'s inbound messages. Wraps the client's protocol handler (nats.js keeps no per-subject
 * counts): a bench and test instrument only, never used by Cotal itself.
 */
export function tapInbound(nc: NatsConnection, opts: { keep?: boolean } = {}): WireTap {
  const tap: WireTap = { keepalives: 0, other: 0, heard: [], stop: () => undefined };
  type Arg = { subject: Uint8Array | string; hdr: number };
  const protocol = (nc as unknown as { protocol?: { processMsg?: (m: Arg, data: Uint8Array) => void } }).protocol;
  if (!protocol?.processMsg) throw new Error("tapInbound: this nats.js has no protocol.processMsg to wrap; update bench/wire-tap.ts for it");
  const own = Object.prototype.hasOwnProperty.call(protocol, "processMsg");
  const original = protocol.processMsg;
  const processMsg = original.bind(protocol);
  tap.stop = () => {
    if (own) protocol.processMsg = original;
    else delete protocol.processMsg;
  };
  protocol.processMsg = (m, data) => {
    const subject = typeof m.subject === "string" ? m.subject : decoder.decode(m.subject);
    const headerOnly = m.hdr > 0 && m.hdr === data.length;
    const status = headerOnly ? /^NATS\/1\.0 (\d{3}.*)$/.exec(decoder.decode(data.subarray(0, m.hdr)).split("\r\n")[0] ?? "")?.[1] : undefined;
    const h: Heard = status ? { subject, status } : { subject };
    if (isKeepalive(h)) tap.keepalives += 1;
    else tap.other += 1;
    if (opts.keep) tap.heard.push(h);
    processMsg(m, data);
  };
  return tap;
}

import type { Transport, TransportSendOptions } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage, MessageExtraInfo, RequestId } from "@modelcontextprotocol/sdk/types.js";

/**
 * Wraps an MCP transport to learn when a response was written: `onWritten(id)` runs after the
 * inner transport's `send` of the response to request `id` resolved (for stdio: the bytes were
 * handed to the pipe). `cotal_inbox` acks the mail of a reply only then. ("Receipt" in Cotal is
 * what a send returns, and the hook protocol's hand-over id; this is neither.)
 */
export class WrittenReplyTransport implements Transport {
  sessionId?: string;

  constructor(
    private readonly inner: Transport,
    private readonly onWritten: (id: RequestId) => void,
  ) {}

  set onmessage(fn: (<T extends JSONRPCMessage>(message: T, extra?: MessageExtraInfo) => void) | undefined) {
    this.inner.onmessage = fn;
  }
  get onmessage() {
    return this.inner.onmessage;
  }
  set onclose(fn: (() => void) | undefined) {
    this.inner.onclose = fn;
  }
  get onclose() {
    return this.inner.onclose;
  }
  set onerror(fn: ((error: Error) => void) | undefined) {
    this.inner.onerror = fn;
  }
  get onerror() {
    return this.inner.onerror;
  }

  setProtocolVersion = (version: string): void => this.inner.setProtocolVersion?.(version);

  start(): Promise<void> {
    return this.inner.start();
  }

  async send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    await this.inner.send(message, options);
    if ("id" in message && ("result" in message || "error" in message) && message.id !== undefined && message.id !== null) this.onWritten(message.id);
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}

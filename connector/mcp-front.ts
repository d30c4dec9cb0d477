// The seat's MCP front: the servers its sessions talk to (stdio in production, in-memory in
// tests), the doorbell rung on them, and the acks of `cotal_inbox` replies, made only once the
// reply was written to the transport.
import type { CotalMcpServer } from "./mcp-server.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { RequestId } from "@modelcontextprotocol/sdk/types.js";
import type { Logger } from "../broker/index.js";
import { WrittenReplyTransport } from "./written-reply.js";
import type { Seat } from "./seat.js";
import { buildMcpServer } from "./tools.js";
import type { Wake } from "./wake.js";

export class McpFront {
  private readonly servers = new Set<CotalMcpServer>();
  /** MCP request id → hand-over it carries (acked once the response is written). */
  private readonly pendingReplies = new Map<RequestId, string>();

  constructor(
    private readonly seat: () => Seat,
    private readonly log: Logger,
  ) {}

  /** Serve the MCP tools on `transport`. */
  async serve(transport: Transport): Promise<CotalMcpServer> {
    const seat = this.seat();
    const server = buildMcpServer(seat, { awaitReply: (id, handover) => this.pendingReplies.set(id, handover) });
    const written = new WrittenReplyTransport(transport, (id) => {
      const h = this.pendingReplies.get(id);
      if (h === undefined) return;
      this.pendingReplies.delete(id);
      void seat.inbox
        .confirm(h)
        .then(() => seat.refreshUnread())
        .catch((err) => this.log.error({ err }, "ack after inbox reply failed"));
    });
    this.servers.add(server);
    server.server.onclose = () => {
      this.servers.delete(server);
      for (const [id, h] of this.pendingReplies) {
        this.pendingReplies.delete(id);
        seat.inbox.release(h);
      }
      seat.refreshUnread();
    };
    await server.connect(written);
    return server;
  }

  /** Ring the doorbell on every connected session: a channel notification saying what waits. */
  ring(w: Wake): void {
    for (const s of this.servers) {
      if (!s.isConnected()) continue;
      s.server
        .notification({ method: "notifications/claude/channel", params: { content: w.content, meta: w.meta } })
        .catch((err: unknown) => this.log.debug({ err }, "wake notification not sent"));
    }
    this.log.debug({ kind: w.kind, meta: w.meta }, "wake");
  }

  async close(): Promise<void> {
    for (const s of this.servers) await s.close().catch(() => undefined);
  }
}

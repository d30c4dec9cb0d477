// The connector's MCP server: the SDK's McpServer that gives every tool its title and behaviour
// hints (the MCP `annotations` clients show and decide on) from one table, and knows the names of
// the tools it serves, so the stdio transport can answer a call of any other name with JSON-RPC
// -32602 as the MCP specification says (the SDK returns a tool result there).
import { McpServer, type RegisteredTool, type ToolCallback } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { AnySchema, ZodRawShapeCompat } from "@modelcontextprotocol/sdk/server/zod-compat.js";
import type { ToolAnnotations } from "@modelcontextprotocol/sdk/types.js";

type Hints = Required<Omit<ToolAnnotations, "title">> & { title: string };

/** Reads the mesh or this seat's own state only. */
const READ = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false } as const;
/** Reaches other agents on the mesh: a second call sends a second message. */
const SEND = { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true } as const;
/** Sets this seat's own state: the same call twice leaves it as once. */
const SET = { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false } as const;

/** Every tool the connector serves, with its title and hints. A tool missing here cannot be registered. */
export const TOOL_HINTS: Readonly<Record<string, Hints>> = {
  cotal_send: { title: "Post on a channel", ...SEND },
  cotal_dm: { title: "Send a direct message", ...SEND },
  cotal_anycast: { title: "Send to a role", ...SEND },
  // Clears (acks) the mail it returns: not read-only, and a second call returns what came after.
  cotal_inbox: { title: "Read waiting mail", readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  cotal_roster: { title: "Who is on the mesh", ...READ },
  cotal_status: { title: "Show or set this seat's status", ...SET },
  cotal_join: { title: "Join a channel", ...SET },
  // Ends a durable membership: posts made while out are not kept for this seat.
  cotal_leave: { title: "Leave a channel", ...SET, destructiveHint: true },
  cotal_channels: { title: "List channels", ...READ },
  cotal_channel_mode: { title: "Set a channel's mode", ...SET },
  cotal_history: { title: "Read a channel's history", ...READ },
  cotal_run: { title: "Dispatch headless runs", ...SEND },
  cotal_personas: { title: "List spawnable personas", ...READ },
  cotal_spawn: { title: "Start a helper seat", ...SEND },
  // Stops the helper's process and revokes its credential.
  cotal_despawn: { title: "Retire a helper", ...SEND, destructiveHint: true, idempotentHint: true },
  cotal_handover: { title: "Hand a helper over", ...SEND, idempotentHint: true },
  cotal_join_help: { title: "How to join a Cotal mesh", ...READ },
};

export class CotalMcpServer extends McpServer {
  /** Names of the tools registered on this server. */
  readonly toolNames = new Set<string>();

  override registerTool<OutputArgs extends ZodRawShapeCompat | AnySchema, InputArgs extends undefined | ZodRawShapeCompat | AnySchema = undefined>(
    name: string,
    config: {
      title?: string;
      description?: string;
      inputSchema?: InputArgs;
      outputSchema?: OutputArgs;
      annotations?: ToolAnnotations;
      _meta?: Record<string, unknown>;
    },
    cb: ToolCallback<InputArgs>,
  ): RegisteredTool {
    const hints = TOOL_HINTS[name];
    if (!hints) throw new Error(`tool ${name} has no entry in TOOL_HINTS (connector/mcp-server.ts)`);
    this.toolNames.add(name);
    const { title, ...annotations } = hints;
    return super.registerTool<OutputArgs, InputArgs>(name, { ...config, title, annotations: { title, ...annotations } }, cb);
  }
}

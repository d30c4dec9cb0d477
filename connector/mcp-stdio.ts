// The connector's MCP stdio transport: newline-delimited JSON-RPC on stdin/stdout, like the SDK's
// StdioServerTransport, but every line gets the answer JSON-RPC and MCP prescribe. The SDK's
// transport drops a line that is not JSON or not a JSON-RPC message (the client waits forever),
// answers `tools/call` with `arguments: null` as an internal error, and a call of an unknown tool
// with a tool result. Here: -32700 (parse error), -32600 (invalid request) and -32602 (invalid
// params: bad `tools/call` params, or a tool this server does not serve).
import process from "node:process";
import { StringDecoder } from "node:string_decoder";
import type { Readable, Writable } from "node:stream";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { CallToolRequestParamsSchema, ErrorCode, JSONRPCMessageSchema, type JSONRPCMessage, type RequestId } from "@modelcontextprotocol/sdk/types.js";
import { LineSplitter } from "./ndjson.js";

/** JSON-RPC's own codes that the SDK's ErrorCode also names; kept here so the mapping is in one place. */
const PARSE_ERROR = ErrorCode.ParseError; // -32700
const INVALID_REQUEST = ErrorCode.InvalidRequest; // -32600
const INVALID_PARAMS = ErrorCode.InvalidParams; // -32602

export class McpStdioTransport implements Transport {
  onmessage?: (message: JSONRPCMessage) => void;
  onclose?: () => void;
  onerror?: (error: Error) => void;
  /** Whether a tool of that name is served; set once the server is built. Unset: every name passes. */
  servesTool?: (name: string) => boolean;

  /** The SDK transport's own limit on one message. */
  private readonly lines = new LineSplitter(10 * 1024 * 1024);
  /** Keeps a UTF-8 character split across chunks whole. */
  private readonly decoder = new StringDecoder("utf8");
  private started = false;
  private readonly ondata = (chunk: Buffer | string) => {
    const got = this.lines.push(typeof chunk === "string" ? chunk : this.decoder.write(chunk));
    if (got === "overflow") {
      this.onerror?.(new Error("an MCP message exceeded the line limit"));
      void this.close();
      return;
    }
    for (const line of got) this.handle(line);
  };
  private readonly onstreamerror = (err: Error) => this.onerror?.(err);

  constructor(
    private readonly stdin: Readable = process.stdin,
    private readonly stdout: Writable = process.stdout,
  ) {}

  async start(): Promise<void> {
    if (this.started) throw new Error("McpStdioTransport already started");
    this.started = true;
    this.stdin.on("data", this.ondata);
    this.stdin.on("error", this.onstreamerror);
  }

  private handle(line: string): void {
    const text = line.replace(/\r$/, "");
    if (!text.trim()) return;
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch (err) {
      return this.refuse(null, PARSE_ERROR, `Parse error: the line is not JSON (${(err as Error).message})`);
    }
    const id = idOf(raw);
    const parsed = JSONRPCMessageSchema.safeParse(raw);
    if (!parsed.success) {
      return this.refuse(id, INVALID_REQUEST, `Invalid Request: not a JSON-RPC 2.0 message (${describeIssue(parsed.error.issues[0])})`);
    }
    const msg = parsed.data;
    if ("method" in msg && "id" in msg && msg.method === "tools/call") {
      const params = CallToolRequestParamsSchema.safeParse(msg.params);
      if (!params.success) {
        return this.refuse(
          msg.id,
          INVALID_PARAMS,
          `Invalid params: tools/call takes {"name": string, "arguments"?: object} (${describeIssue(params.error.issues[0])})`,
        );
      }
      if (this.servesTool && !this.servesTool(params.data.name)) {
        return this.refuse(msg.id, INVALID_PARAMS, `Unknown tool: ${params.data.name} (tools/list names the tools this server serves)`);
      }
    }
    this.onmessage?.(msg);
  }

  private refuse(id: RequestId | null, code: number, message: string): void {
    void this.write({ jsonrpc: "2.0", id, error: { code, message } });
  }

  send(message: JSONRPCMessage): Promise<void> {
    return this.write(message);
  }

  private write(message: unknown): Promise<void> {
    return new Promise((resolve) => {
      if (this.stdout.write(JSON.stringify(message) + "\n")) resolve();
      else this.stdout.once("drain", resolve);
    });
  }

  async close(): Promise<void> {
    this.stdin.off("data", this.ondata);
    this.stdin.off("error", this.onstreamerror);
    if (this.stdin.listenerCount("data") === 0) this.stdin.pause();
    this.onclose?.();
  }
}

/** The id of a request that could not be read as one: JSON-RPC answers with it when it can be read, else null. */
function idOf(raw: unknown): RequestId | null {
  if (!raw || typeof raw !== "object" || Array.isArray(raw)) return null;
  const id = (raw as { id?: unknown }).id;
  return typeof id === "string" || (typeof id === "number" && Number.isFinite(id)) ? id : null;
}

function describeIssue(issue: { path: PropertyKey[]; message: string } | undefined): string {
  if (!issue) return "unreadable";
  const at = issue.path.length ? issue.path.map(String).join(".") : "the message";
  return `${at}: ${issue.message}`;
}

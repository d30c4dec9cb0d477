/**
 * A scripted stand-in for the Anthropic Messages API, for running the real `claude` CLI
 * offline. It listens on 127.0.0.1 with an OS-chosen port and answers:
 *
 * - `POST /v1/messages` (streaming SSE or plain JSON) by playing a script of replies to the
 *   CLI's main agent loop, and a short default text to anything else;
 * - `POST /v1/messages/count_tokens` with a rough `{ input_tokens }`;
 * - every other path (`HEAD /api/hello`, `GET /v1/models`, …) with 200 and a small JSON body.
 *
 * Every request is recorded in `requests`, so tests can assert what the model was shown.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { randomBytes } from "node:crypto";

/** One content block of a scripted reply: a string is a text block. */
export type ReplyBlock = string | ToolUseBlock;

/** A scripted `tool_use` block; `id` defaults to a fresh `toolu_…`. */
export interface ToolUseBlock {
  tool: string;
  input?: Record<string, unknown>;
  id?: string;
}

/** One scripted model turn. */
export interface ScriptStep {
  /**
   * Play this step only on a main-loop request for which this holds; until then main-loop
   * requests get the default reply and the step stays at the head of the script.
   */
  when?: (req: RecordedRequest) => boolean;
  /**
   * Play this step only when the request's newest turn (the messages after the last assistant
   * message) carries a `tool_result` for a `tool_use` of this tool (full name, e.g.
   * `mcp__tiny__echo`). Combined with `when` by AND.
   */
  afterToolResult?: string;
  /** The reply's content blocks, or a function of the request that builds them. */
  reply: ReplyBlock[] | ((req: RecordedRequest) => ReplyBlock[]);
  /** Wait this long before answering (e.g. to kill the CLI mid-turn). The wait ends if the client goes away. */
  delayMs?: number;
}

/** What a request was, as the double classified it. */
export const RequestKind = {
  /** A Messages call of the CLI's main agent loop: it consumes script steps. */
  main: "main",
  /** Any other Messages call (titles, summaries, quota checks, …): default text reply. */
  side: "side",
  /** `POST /v1/messages/count_tokens`. */
  countTokens: "count_tokens",
  /** Anything else: health probes, model lists, telemetry. */
  probe: "probe",
} as const;
export type RequestKind = (typeof RequestKind)[keyof typeof RequestKind];

/** A request as received, with the reply the double gave to a Messages call. */
export interface RecordedRequest {
  /** Arrival order, from 0. */
  seq: number;
  method: string;
  /** Path without the query string, e.g. `/v1/messages`. */
  path: string;
  /** Raw query string without `?` (the CLI sends `beta=true`). */
  query: string;
  headers: http.IncomingHttpHeaders;
  /** Parsed JSON body; `undefined` when the body was empty or not JSON. */
  body: MessagesBody | undefined;
  rawBody: string;
  kind: RequestKind;
  /** The content blocks replied to a Messages call (after ids were assigned). */
  reply?: ReplyContent[];
  /** Index of the script step played, for main-loop requests that consumed one. */
  step?: number;
  receivedAt: number;
}

/** The fields of a Messages request body that the double reads; the rest pass through. */
export interface MessagesBody {
  model?: string;
  stream?: boolean;
  max_tokens?: number;
  system?: string | Array<{ type: string; text?: string }>;
  messages?: Array<{ role: string; content: string | ContentBlock[] }>;
  tools?: Array<{ name: string; [k: string]: unknown }>;
  [k: string]: unknown;
}

/** A content block in a request message (loosely typed: the double only reads a few fields). */
export interface ContentBlock {
  type: string;
  text?: string;
  id?: string;
  name?: string;
  input?: unknown;
  tool_use_id?: string;
  content?: string | ContentBlock[];
  is_error?: boolean;
  [k: string]: unknown;
}

/** A content block of a reply, as sent on the wire. */
export type ReplyContent = { type: "text"; text: string } | { type: "tool_use"; id: string; name: string; input: Record<string, unknown> };

/** A `tool_result` found in a request, with the tool name resolved from the matching `tool_use`. */
export interface ToolResult {
  toolUseId: string;
  /** Name of the tool whose `tool_use` this answers; `undefined` if no such `tool_use` was in the request. */
  name: string | undefined;
  /** The result's text content, flattened. */
  text: string;
  isError: boolean;
}

export interface ModelDoubleOptions {
  /** Decides which Messages calls are the main loop (and consume script steps). Default: {@link isMainLoopRequest}. */
  isMainLoop?: (req: RecordedRequest) => boolean;
  /** Text of the default reply (script exhausted, step not yet due, or side request). */
  defaultText?: string;
  /** API keys the double refuses as the real API does a bad one: 401 `authentication_error` to every Messages call. */
  rejectKeys?: readonly string[];
  /** Address to listen on (default 127.0.0.1; the fault lab's runner address, for a CLI in another network namespace). */
  host?: string;
  /** Called with each request once it is recorded (the fault lab's witness of what a model was shown). */
  onRequest?: (req: RecordedRequest) => void;
}

export const DEFAULT_REPLY_TEXT = "OK.";

/**
 * The CLI's main agent loop sends its tool list (`tools` non-empty) and the agent system
 * prompt; its side calls (title / summary / quota / classifier prompts) send no tools.
 */
export function isMainLoopRequest(req: RecordedRequest): boolean {
  const tools = req.body?.tools;
  return Array.isArray(tools) && tools.length > 0;
}

export class ModelDouble {
  /** Every request received, in arrival order. */
  readonly requests: RecordedRequest[] = [];
  readonly #script: ScriptStep[];
  #next = 0;
  #seq = 0;
  readonly #server: http.Server;
  readonly #options: ModelDoubleOptions;
  readonly #pending = new Set<() => void>();

  private constructor(server: http.Server, script: ScriptStep[], options: ModelDoubleOptions) {
    this.#server = server;
    this.#script = [...script];
    this.#options = options;
  }

  /** Start a double playing `script` on 127.0.0.1 with an OS-chosen port. */
  static async start(script: ScriptStep[] = [], options: ModelDoubleOptions = {}): Promise<ModelDouble> {
    const server = http.createServer();
    const double = new ModelDouble(server, script, options);
    server.on("request", (req, res) => double.#onRequest(req, res));
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(0, options.host ?? "127.0.0.1", () => {
        server.off("error", reject);
        resolve();
      });
    });
    return double;
  }

  /** Base URL for `ANTHROPIC_BASE_URL`, e.g. `http://127.0.0.1:41234`. */
  get url(): string {
    const { port } = this.#server.address() as AddressInfo;
    return `http://${this.#options.host ?? "127.0.0.1"}:${port}`;
  }

  /** Main-loop Messages requests, in order. */
  get mainRequests(): RecordedRequest[] {
    return this.requests.filter((r) => r.kind === RequestKind.main);
  }

  /** Messages requests that were not the main loop. */
  get sideRequests(): RecordedRequest[] {
    return this.requests.filter((r) => r.kind === RequestKind.side);
  }

  /** Number of script steps not yet played. */
  get remainingSteps(): number {
    return this.#script.length - this.#next;
  }

  /** Append steps to the script while it runs. */
  push(...steps: ScriptStep[]): void {
    this.#script.push(...steps);
  }

  /** Stop listening; cut open connections and abandon delayed replies. */
  async close(): Promise<void> {
    for (const abandon of [...this.#pending]) abandon();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #onRequest(req: http.IncomingMessage, res: http.ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      void this.#handle(req, res, Buffer.concat(chunks).toString("utf8")).catch((err: unknown) => {
        if (!res.headersSent) res.writeHead(500, { "content-type": "application/json" });
        res.end(JSON.stringify({ type: "error", error: { type: "api_error", message: String(err) } }));
      });
    });
  }

  async #handle(req: http.IncomingMessage, res: http.ServerResponse, rawBody: string): Promise<void> {
    const [path = "/", query = ""] = (req.url ?? "/").split("?", 2);
    let body: MessagesBody | undefined;
    try {
      body = rawBody ? (JSON.parse(rawBody) as MessagesBody) : undefined;
    } catch {
      body = undefined;
    }
    const rec: RecordedRequest = {
      seq: this.#seq++,
      method: req.method ?? "GET",
      path,
      query,
      headers: req.headers,
      body,
      rawBody,
      kind: RequestKind.probe,
      receivedAt: Date.now(),
    };
    this.requests.push(rec);

    if (rec.method === "POST" && path === "/v1/messages/count_tokens") {
      rec.kind = RequestKind.countTokens;
      sendJson(res, { input_tokens: estimateTokens(rawBody) });
      return;
    }
    if (rec.method !== "POST" || path !== "/v1/messages") {
      if (rec.method === "HEAD") {
        res.writeHead(200, { "content-type": "application/json" }).end();
      } else if (path === "/v1/models") {
        sendJson(res, { data: [], has_more: false, first_id: null, last_id: null });
      } else {
        sendJson(res, {});
      }
      return;
    }

    const key = req.headers["x-api-key"];
    if (typeof key === "string" && this.#options.rejectKeys?.includes(key)) {
      rec.kind = RequestKind.side;
      res.writeHead(401, { "content-type": "application/json" });
      res.end(JSON.stringify({ type: "error", error: { type: "authentication_error", message: "invalid x-api-key" } }));
      return;
    }
    const isMain = (this.#options.isMainLoop ?? isMainLoopRequest)(rec);
    rec.kind = isMain ? RequestKind.main : RequestKind.side;
    this.#options.onRequest?.(rec);
    let blocks: ReplyBlock[] = [defaultReply(body, this.#options.defaultText ?? DEFAULT_REPLY_TEXT)];
    let delayMs = 0;
    const step = isMain ? this.#script[this.#next] : undefined;
    if (step && stepMatches(step, rec)) {
      rec.step = this.#next++;
      blocks = typeof step.reply === "function" ? step.reply(rec) : step.reply;
      delayMs = step.delayMs ?? 0;
    }
    const content = blocks.map(toReplyContent);
    rec.reply = content;

    if (delayMs > 0 && !(await this.#wait(delayMs, res))) return;
    const message = {
      id: `msg_${randomId()}`,
      type: "message",
      role: "assistant",
      model: body?.model ?? "claude-double",
      content,
      stop_reason: content.some((b) => b.type === "tool_use") ? "tool_use" : "end_turn",
      stop_sequence: null,
      usage: { input_tokens: estimateTokens(rawBody), output_tokens: estimateTokens(JSON.stringify(content)) },
    };
    if (body?.stream) sendStream(res, message);
    else sendJson(res, message);
  }

  /** Resolves true after `ms`, or false if the client went away or the double closed first. */
  #wait(ms: number, res: http.ServerResponse): Promise<boolean> {
    return new Promise((resolve) => {
      const finish = (ok: boolean): void => {
        clearTimeout(timer);
        res.off("close", abandon);
        this.#pending.delete(abandon);
        resolve(ok);
      };
      const abandon = (): void => finish(false);
      const timer = setTimeout(() => finish(true), ms);
      res.on("close", abandon);
      this.#pending.add(abandon);
    });
  }
}

function stepMatches(step: ScriptStep, req: RecordedRequest): boolean {
  if (step.afterToolResult !== undefined && !newToolResults(req).some((r) => r.name === step.afterToolResult)) return false;
  if (step.when && !step.when(req)) return false;
  return true;
}

/**
 * Side calls may demand structured output (`output_config.format` with a JSON schema, e.g. the
 * session-title call wants `{"title": …}`): answer with a minimal object of that shape.
 */
function defaultReply(body: MessagesBody | undefined, text: string): string {
  const format = (body?.output_config as { format?: { type?: string; schema?: JsonSchema } } | undefined)?.format;
  if (format?.type === "json_schema" && format.schema) return JSON.stringify(sampleOf(format.schema, text));
  return text;
}

interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  enum?: unknown[];
}

function sampleOf(schema: JsonSchema, text: string): unknown {
  if (schema.enum?.length) return schema.enum[0];
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case "object": {
      const out: Record<string, unknown> = {};
      for (const key of schema.required ?? Object.keys(schema.properties ?? {})) {
        out[key] = sampleOf(schema.properties?.[key] ?? {}, text);
      }
      return out;
    }
    case "array":
      return [];
    case "number":
    case "integer":
      return 0;
    case "boolean":
      return false;
    case "null":
      return null;
    default:
      return text;
  }
}

function toReplyContent(block: ReplyBlock): ReplyContent {
  if (typeof block === "string") return { type: "text", text: block };
  return { type: "tool_use", id: block.id ?? `toolu_${randomId()}`, name: block.tool, input: block.input ?? {} };
}

function sendJson(res: http.ServerResponse, value: unknown): void {
  const text = JSON.stringify(value);
  res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

interface WireMessage {
  id: string;
  model: string;
  content: ReplyContent[];
  stop_reason: string;
  usage: { input_tokens: number; output_tokens: number };
}

function sendStream(res: http.ServerResponse, message: WireMessage): void {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
  const event = (type: string, data: Record<string, unknown>): void => {
    res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
  };
  event("message_start", {
    message: {
      ...message,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: message.usage.input_tokens, output_tokens: 1 },
    },
  });
  message.content.forEach((block, index) => {
    if (block.type === "text") {
      event("content_block_start", { index, content_block: { type: "text", text: "" } });
      for (const piece of halves(block.text)) {
        event("content_block_delta", { index, delta: { type: "text_delta", text: piece } });
      }
    } else {
      event("content_block_start", { index, content_block: { type: "tool_use", id: block.id, name: block.name, input: {} } });
      for (const piece of halves(JSON.stringify(block.input))) {
        event("content_block_delta", { index, delta: { type: "input_json_delta", partial_json: piece } });
      }
    }
    event("content_block_stop", { index });
  });
  event("message_delta", {
    delta: { stop_reason: message.stop_reason, stop_sequence: null },
    usage: { output_tokens: message.usage.output_tokens },
  });
  event("message_stop", {});
  res.end();
}

/** Split into two deltas (so clients really reassemble), or one if too short. */
function halves(s: string): string[] {
  if (s.length < 2) return [s];
  const mid = Math.floor(s.length / 2);
  return [s.slice(0, mid), s.slice(mid)];
}

function estimateTokens(s: string): number {
  return Math.max(1, Math.ceil(s.length / 4));
}

function randomId(): string {
  return randomBytes(12).toString("hex");
}

// ---- Reading what the model was shown -------------------------------------------------

/** The system prompt as one string (blocks joined by newlines). */
export function systemText(req: RecordedRequest): string {
  const system = req.body?.system;
  if (system === undefined) return "";
  if (typeof system === "string") return system;
  return system.map((b) => b.text ?? "").join("\n");
}

/** Text of a message's content: text blocks, tool_result contents, tool_use inputs as JSON. */
function contentText(content: string | ContentBlock[] | undefined): string {
  if (content === undefined) return "";
  if (typeof content === "string") return content;
  return content
    .map((b) => {
      if (b.type === "text") return b.text ?? "";
      if (b.type === "tool_result") return contentText(b.content);
      if (b.type === "tool_use") return JSON.stringify(b.input ?? {});
      return "";
    })
    .filter((s) => s !== "")
    .join("\n");
}

/** Text of each message, in order (system reminders and hook context included, as sent). */
export function messageTexts(req: RecordedRequest): Array<{ role: string; text: string }> {
  return (req.body?.messages ?? []).map((m) => ({ role: m.role, text: contentText(m.content) }));
}

/** Everything the model was shown as text: system prompt, then every message, flattened. */
export function allText(req: RecordedRequest): string {
  return [systemText(req), ...messageTexts(req).map((m) => m.text)].filter((s) => s !== "").join("\n");
}

/** Names of the tools offered in the request. */
export function toolNames(req: RecordedRequest): string[] {
  return (req.body?.tools ?? []).map((t) => t.name);
}

/** Every `tool_result` in the request, with the tool name from the matching `tool_use`. */
export function toolResults(req: RecordedRequest): ToolResult[] {
  const names = new Map<string, string>();
  const results: ToolResult[] = [];
  for (const m of req.body?.messages ?? []) {
    if (typeof m.content === "string") continue;
    for (const b of m.content) {
      if (b.type === "tool_use" && b.id !== undefined && b.name !== undefined) names.set(b.id, b.name);
      if (b.type === "tool_result" && b.tool_use_id !== undefined) {
        results.push({
          toolUseId: b.tool_use_id,
          name: names.get(b.tool_use_id),
          text: contentText(b.content),
          isError: b.is_error === true,
        });
      }
    }
  }
  return results;
}

/** The `tool_result`s of the newest turn: those after the last assistant message. */
export function newToolResults(req: RecordedRequest): ToolResult[] {
  const messages = req.body?.messages ?? [];
  let lastAssistant = -1;
  messages.forEach((m, i) => {
    if (m.role === "assistant") lastAssistant = i;
  });
  const pending = new Set<string>();
  messages.slice(lastAssistant + 1).forEach((m) => {
    if (typeof m.content === "string") return;
    for (const b of m.content) if (b.type === "tool_result" && b.tool_use_id !== undefined) pending.add(b.tool_use_id);
  });
  return toolResults(req).filter((r) => pending.has(r.toolUseId));
}

/**
 * Text of the newest turn: every message after the last assistant message (the whole request on a
 * session's first). Mail a hook handed over (a seat's opening prompt among it) arrives there as
 * its own message, beside the prompt that started the turn.
 */
export function newTurnText(req: RecordedRequest): string {
  const messages = messageTexts(req);
  const lastAssistant = messages.map((m) => m.role).lastIndexOf("assistant");
  return messages
    .slice(lastAssistant + 1)
    .map((m) => m.text)
    .join("\n");
}

/** Text of the last user message (what the model is answering now). */
export function lastUserText(req: RecordedRequest): string {
  const users = messageTexts(req).filter((m) => m.role === "user");
  return users.at(-1)?.text ?? "";
}

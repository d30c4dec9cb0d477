/**
 * A scripted stand-in for the OpenAI Responses API, for running the real `codex` CLI offline
 * (through a provider named in config.toml with the double's base URL), beside the Messages-API
 * double (model-double.ts). It listens on 127.0.0.1 with an OS-chosen port and answers:
 *
 * - `POST /v1/responses` with a streamed turn (SSE: `response.created`,
 *   `response.output_item.added`/`.done` per item, `response.completed` with `usage`), playing
 *   a script of replies; a short default text once the script is done or a step is not due;
 * - every other path (model lists, probes) with 200 and a small JSON body.
 *
 * A reply item is text (a `message`) or a call (a `function_call`); an MCP tool is called with
 * its server's namespace (`{ namespace: "mcp__cotal", tool: "cotal_dm" }`), as Codex offers each
 * MCP server's tools as one `namespace` tool. Every request is recorded in `requests`.
 *
 * Serve it from a process that does not block: a CLI under test started with spawnSync would
 * wait on a double that cannot answer.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { randomBytes } from "node:crypto";

/** A scripted function call; `namespace` names an MCP server's tool group (`mcp__<server>`). */
export interface FunctionCallItem {
  tool: string;
  namespace?: string;
  arguments?: Record<string, unknown>;
  callId?: string;
}

/** One item of a scripted reply: a string is a text message. */
export type ResponseItem = string | FunctionCallItem;

/** One scripted model turn (one `POST /v1/responses`). */
export interface ResponsesStep {
  /** Play this step only on a request for which this holds; until then requests get the default text. */
  when?: (req: RecordedResponsesRequest) => boolean;
  /** The reply's items, or a function of the request that builds them. */
  reply: ResponseItem[] | ((req: RecordedResponsesRequest) => ResponseItem[]);
}

/** An `input` item of a Responses request (loosely typed: the double reads a few fields). */
export interface InputItem {
  type?: string;
  role?: string;
  content?: string | Array<{ type: string; text?: string }>;
  name?: string;
  call_id?: string;
  output?: unknown;
  [k: string]: unknown;
}

/** The fields of a Responses request body the double reads; the rest pass through. */
export interface ResponsesBody {
  model?: string;
  instructions?: string;
  input?: InputItem[];
  tools?: Array<{ type?: string; name?: string; tools?: Array<{ name?: string }>; [k: string]: unknown }>;
  stream?: boolean;
  [k: string]: unknown;
}

export interface RecordedResponsesRequest {
  seq: number;
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: ResponsesBody | undefined;
  /** Whether this was a `POST …/responses` (a model turn). */
  turn: boolean;
  /** The script step played, when one was. */
  step?: number;
}

export interface ResponsesDoubleOptions {
  /** Text of the default reply. */
  defaultText?: string;
  /** Token usage reported on every `response.completed`. */
  usage?: { input_tokens: number; output_tokens: number };
}

export const DEFAULT_RESPONSES_TEXT = "OK.";

export class ResponsesDouble {
  readonly requests: RecordedResponsesRequest[] = [];
  private readonly script: ResponsesStep[] = [];
  private played = 0;
  private readonly server: http.Server;

  private constructor(private readonly o: ResponsesDoubleOptions) {
    this.server = http.createServer((req, res) => void this.handle(req, res));
  }

  /** Start listening on 127.0.0.1 (port chosen by the OS). */
  static async start(o: ResponsesDoubleOptions = {}): Promise<ResponsesDouble> {
    const d = new ResponsesDouble(o);
    await new Promise<void>((resolve) => d.server.listen(0, "127.0.0.1", resolve));
    return d;
  }

  /** The provider base URL (`…/v1`) a Codex `config.toml` names. */
  get baseUrl(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1`;
  }

  /** Append scripted turns. */
  push(...steps: ResponsesStep[]): void {
    this.script.push(...steps);
  }

  /** Model turns received so far. */
  turns(): RecordedResponsesRequest[] {
    return this.requests.filter((r) => r.turn);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks).toString("utf8");
    let body: ResponsesBody | undefined;
    try {
      body = raw ? (JSON.parse(raw) as ResponsesBody) : undefined;
    } catch {
      body = undefined;
    }
    const path = (req.url ?? "/").split("?")[0]!;
    const rec: RecordedResponsesRequest = {
      seq: this.requests.length,
      method: req.method ?? "GET",
      path,
      headers: req.headers,
      body,
      turn: req.method === "POST" && path.endsWith("/responses"),
    };
    this.requests.push(rec);
    if (!rec.turn) {
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ object: "list", data: [] }));
      return;
    }
    const step = this.script[0];
    let items: ResponseItem[] = [this.o.defaultText ?? DEFAULT_RESPONSES_TEXT];
    if (step && (!step.when || step.when(rec))) {
      this.script.shift();
      rec.step = this.played++;
      items = typeof step.reply === "function" ? step.reply(rec) : step.reply;
    }
    this.stream(res, items, body?.model ?? "double");
  }

  private stream(res: http.ServerResponse, items: ResponseItem[], model: string): void {
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    const id = `resp_${randomBytes(8).toString("hex")}`;
    let n = 0;
    const send = (type: string, data: Record<string, unknown>): void => {
      res.write(`event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: n++, ...data })}\n\n`);
    };
    const response = { id, object: "response", model, status: "in_progress", output: [] as unknown[] };
    send("response.created", { response });
    const output = items.map((item) => wireItem(item));
    output.forEach((item, i) => {
      send("response.output_item.added", { output_index: i, item: { ...item, status: "in_progress" } });
      send("response.output_item.done", { output_index: i, item });
    });
    const usage = this.o.usage ?? { input_tokens: 100, output_tokens: 10 };
    send("response.completed", {
      response: {
        ...response,
        status: "completed",
        output,
        usage: {
          input_tokens: usage.input_tokens,
          input_tokens_details: { cached_tokens: 0 },
          output_tokens: usage.output_tokens,
          output_tokens_details: { reasoning_tokens: 0 },
          total_tokens: usage.input_tokens + usage.output_tokens,
        },
      },
    });
    res.end();
  }
}

function wireItem(item: ResponseItem): Record<string, unknown> {
  const id = randomBytes(6).toString("hex");
  if (typeof item === "string") {
    return { type: "message", id: `msg_${id}`, role: "assistant", status: "completed", content: [{ type: "output_text", text: item, annotations: [] }] };
  }
  return {
    type: "function_call",
    id: `fc_${id}`,
    status: "completed",
    call_id: item.callId ?? `call_${id}`,
    name: item.tool,
    ...(item.namespace ? { namespace: item.namespace } : {}),
    arguments: JSON.stringify(item.arguments ?? {}),
  };
}

/** The text of every user message in a request's input, in order. */
export function inputTexts(req: RecordedResponsesRequest): string[] {
  return (req.body?.input ?? [])
    .filter((i) => i.role === "user")
    .map((i) => (typeof i.content === "string" ? i.content : (i.content ?? []).map((c) => c.text ?? "").join("")));
}

/** The outputs the CLI sent back for function calls, in order. */
export function functionOutputs(req: RecordedResponsesRequest): Array<{ callId: string | undefined; output: string }> {
  return (req.body?.input ?? [])
    .filter((i) => i.type === "function_call_output")
    .map((i) => ({ callId: i.call_id, output: typeof i.output === "string" ? i.output : JSON.stringify(i.output) }));
}

/**
 * A user's `~/.codex/config.toml` that names the double as their provider (it takes a named
 * provider with the Responses wire API; `OPENAI_BASE_URL` alone does not redirect Codex), with
 * its key read from `envKey`.
 */
export function codexProviderConfig(baseUrl: string, envKey: string, model = "gpt-double"): string {
  return [
    `model = "${model}"`,
    'model_provider = "double"',
    "",
    "[model_providers.double]",
    'name = "double"',
    `base_url = "${baseUrl}"`,
    'wire_api = "responses"',
    `env_key = "${envKey}"`,
    "",
  ].join("\n");
}

/**
 * A scripted stand-in for the Gemini API (generativelanguage `v1beta`), for running the real
 * `gemini` CLI offline (which takes `GEMINI_API_KEY`,
 * `GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:<port>`, API-key auth selected in settings.json),
 * beside the Messages (model-double.ts) and Responses (responses-double.ts) doubles. It listens on
 * 127.0.0.1 with an OS-chosen port and answers:
 *
 * - `POST /v1beta/models/<model>:streamGenerateContent?alt=sse` (a model turn) with SSE `data:`
 *   lines, each a `GenerateContentResponse` (`candidates[0].content.parts`, `finishReason`,
 *   `usageMetadata`), playing a script of replies; a short default text once the script is done
 *   or a step is not due;
 * - `POST /v1beta/models/<model>:generateContent` (the CLI's routing and side calls, and
 *   non-streaming turns) with one such response, holding the default text (or, when the request
 *   asks for JSON, a minimal object of its schema);
 * - `POST …:countTokens` with a rough `totalTokens`; every other path with 200 and `{}`.
 *
 * A reply part is text or a function call (`{ tool, args }`: a `functionCall` part); the CLI
 * offers its tools as `tools[].functionDeclarations[]` and answers a call with a
 * `functionResponse` part in its next request. Every request is recorded in `requests`.
 *
 * Serve it from a process that does not block: a CLI under test started with spawnSync would
 * wait on a double that cannot answer.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";

/** A scripted function call (the CLI's tool name, e.g. an MCP tool `cotal_dm`). */
export interface GeminiCallPart {
  tool: string;
  args?: Record<string, unknown>;
}

/** One part of a scripted reply: a string is a text part. */
export type GeminiReplyPart = string | GeminiCallPart;

/** One scripted model turn (one streamed request). */
export interface GeminiStep {
  /** Play this step only on a turn for which this holds; until then turns get the default text. */
  when?: (req: RecordedGeminiRequest) => boolean;
  reply: GeminiReplyPart[] | ((req: RecordedGeminiRequest) => GeminiReplyPart[]);
}

/** A content part of a request (loosely typed: the double reads a few fields). */
export interface GeminiPart {
  text?: string;
  functionCall?: { name?: string; args?: unknown };
  functionResponse?: { name?: string; response?: unknown };
  [k: string]: unknown;
}

/** The fields of a request body the double reads; the rest pass through. */
export interface GeminiBody {
  contents?: Array<{ role?: string; parts?: GeminiPart[] }>;
  systemInstruction?: { parts?: GeminiPart[] };
  tools?: Array<{ functionDeclarations?: Array<{ name?: string }> }>;
  generationConfig?: { responseMimeType?: string; responseJsonSchema?: JsonSchema; responseSchema?: JsonSchema; [k: string]: unknown };
  [k: string]: unknown;
}

export interface RecordedGeminiRequest {
  seq: number;
  method: string;
  path: string;
  /** The model named in the path. */
  model?: string;
  /** `streamGenerateContent`, `generateContent`, `countTokens`, or undefined for anything else. */
  action?: string;
  headers: http.IncomingHttpHeaders;
  body: GeminiBody | undefined;
  /** A streamed model turn (it consumes script steps). */
  turn: boolean;
  step?: number;
}

export interface GeminiDoubleOptions {
  defaultText?: string;
  /** Token counts reported in every response's usageMetadata. */
  usage?: { promptTokenCount: number; candidatesTokenCount: number };
}

export const DEFAULT_GEMINI_TEXT = "OK.";

interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  enum?: unknown[];
  minimum?: number;
}

export class GeminiDouble {
  readonly requests: RecordedGeminiRequest[] = [];
  private readonly script: GeminiStep[] = [];
  private played = 0;
  private seq = 0;
  private readonly server: http.Server;

  private constructor(private readonly o: GeminiDoubleOptions) {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => this.handle(req, res, Buffer.concat(chunks).toString("utf8")));
    });
  }

  /** Start listening on 127.0.0.1 (port chosen by the OS). */
  static async start(o: GeminiDoubleOptions = {}): Promise<GeminiDouble> {
    const d = new GeminiDouble(o);
    await new Promise<void>((resolve) => d.server.listen(0, "127.0.0.1", resolve));
    return d;
  }

  /** The base URL `GOOGLE_GEMINI_BASE_URL` names (no path). */
  get baseUrl(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  push(...steps: GeminiStep[]): void {
    this.script.push(...steps);
  }

  /** Streamed model turns received so far. */
  turns(): RecordedGeminiRequest[] {
    return this.requests.filter((r) => r.turn);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse, raw: string): void {
    const [path = "/"] = (req.url ?? "/").split("?", 1);
    const m = /^\/v1(?:beta|alpha)?\/models\/([^:/]+):([A-Za-z]+)$/.exec(path);
    let body: GeminiBody | undefined;
    try {
      body = raw ? (JSON.parse(raw) as GeminiBody) : undefined;
    } catch {
      body = undefined;
    }
    const rec: RecordedGeminiRequest = {
      seq: this.seq++,
      method: req.method ?? "GET",
      path,
      ...(m ? { model: m[1]!, action: m[2]! } : {}),
      headers: req.headers,
      body,
      turn: m?.[2] === "streamGenerateContent",
    };
    this.requests.push(rec);
    if (rec.action === "countTokens") return json(res, { totalTokens: Math.max(1, Math.ceil(raw.length / 4)) });
    if (rec.action !== "streamGenerateContent" && rec.action !== "generateContent") return json(res, {});
    let parts: GeminiReplyPart[] = [this.defaultText(body)];
    const step = rec.turn ? this.script[this.played] : undefined;
    if (step && (!step.when || step.when(rec))) {
      rec.step = this.played++;
      parts = typeof step.reply === "function" ? step.reply(rec) : step.reply;
    }
    const response = {
      candidates: [{ content: { role: "model", parts: parts.map(toPart) }, finishReason: "STOP", index: 0 }],
      usageMetadata: {
        promptTokenCount: this.o.usage?.promptTokenCount ?? Math.max(1, Math.ceil(raw.length / 4)),
        candidatesTokenCount: this.o.usage?.candidatesTokenCount ?? 1,
        totalTokenCount: (this.o.usage?.promptTokenCount ?? Math.ceil(raw.length / 4)) + (this.o.usage?.candidatesTokenCount ?? 1),
      },
      modelVersion: rec.model ?? "gemini-double",
    };
    if (rec.action === "generateContent") return json(res, response);
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
    res.end(`data: ${JSON.stringify(response)}\r\n\r\n`);
  }

  /** The default text, or for a request that wants JSON a minimal object of its schema (the CLI's routing call does). */
  private defaultText(body: GeminiBody | undefined): string {
    const text = this.o.defaultText ?? DEFAULT_GEMINI_TEXT;
    const g = body?.generationConfig;
    if (g?.responseMimeType !== "application/json") return text;
    const schema = g.responseJsonSchema ?? g.responseSchema;
    return JSON.stringify(schema ? sampleOf(schema, text) : {});
  }
}

function toPart(p: GeminiReplyPart): GeminiPart {
  return typeof p === "string" ? { text: p } : { functionCall: { name: p.tool, args: p.args ?? {} } };
}

function sampleOf(schema: JsonSchema, text: string): unknown {
  if (schema.enum?.length) return schema.enum[0];
  const type = (Array.isArray(schema.type) ? schema.type[0] : schema.type)?.toLowerCase();
  if (type === "object")
    return Object.fromEntries((schema.required ?? Object.keys(schema.properties ?? {})).map((k) => [k, sampleOf(schema.properties?.[k] ?? {}, text)]));
  if (type === "array") return [];
  // At least 1: the CLI's routing classifier asks for a complexity score "from 1-100" and refuses 0.
  if (type === "number" || type === "integer") return schema.minimum ?? 1;
  if (type === "boolean") return false;
  return text;
}

function json(res: http.ServerResponse, value: unknown): void {
  const text = JSON.stringify(value);
  res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

/** The text of every part of a request's contents (user turns, function responses as JSON). */
export function contentTexts(req: RecordedGeminiRequest): string[] {
  return (req.body?.contents ?? []).flatMap((c) =>
    (c.parts ?? []).map((p) => p.text ?? (p.functionResponse ? JSON.stringify(p.functionResponse) : p.functionCall ? JSON.stringify(p.functionCall) : "")),
  );
}

/** The function responses in a request, by the tool's name. */
export function functionResponses(req: RecordedGeminiRequest): Array<{ name: string | undefined; response: unknown }> {
  return (req.body?.contents ?? []).flatMap((c) =>
    (c.parts ?? []).flatMap((p) => (p.functionResponse ? [{ name: p.functionResponse.name, response: p.functionResponse.response }] : [])),
  );
}

/** The tools a request offered (function declarations' names). */
export function offeredTools(req: RecordedGeminiRequest): string[] {
  return (req.body?.tools ?? []).flatMap((t) => (t.functionDeclarations ?? []).map((f) => f.name ?? ""));
}

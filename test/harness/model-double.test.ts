import { afterEach, describe, expect, it } from "vitest";
import {
  allText,
  DEFAULT_REPLY_TEXT,
  ModelDouble,
  newToolResults,
  RequestKind,
  systemText,
  toolNames,
  toolResults,
  type MessagesBody,
} from "../../testbed/model-double.js";
import { until } from "../../testbed/until.js";

const TOOLS = [{ name: "mcp__tiny__echo", description: "echo", input_schema: { type: "object" } }];

let double: ModelDouble | undefined;
afterEach(async () => {
  await double?.close();
  double = undefined;
});

async function post(url: string, body: MessagesBody, path = "/v1/messages?beta=true"): Promise<Response> {
  return fetch(`${url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": "dummy" },
    body: JSON.stringify(body),
  });
}

interface SseEvent {
  event: string;
  data: Record<string, unknown> & { type: string };
}

function parseSse(text: string): SseEvent[] {
  return text
    .split("\n\n")
    .filter((chunk) => chunk.trim() !== "")
    .map((chunk) => {
      const lines = chunk.split("\n");
      const event = lines.find((l) => l.startsWith("event: "))?.slice(7) ?? "";
      const data = JSON.parse(lines.find((l) => l.startsWith("data: "))?.slice(6) ?? "{}") as SseEvent["data"];
      return { event, data };
    });
}

/** Rebuild the message content from SSE deltas, as a client would. */
function assemble(events: SseEvent[]): Array<Record<string, unknown>> {
  const blocks: Array<Record<string, unknown>> = [];
  const json: string[] = [];
  for (const { data } of events) {
    const index = data.index as number;
    if (data.type === "content_block_start") {
      blocks[index] = { ...(data.content_block as Record<string, unknown>) };
      json[index] = "";
    } else if (data.type === "content_block_delta") {
      const delta = data.delta as { type: string; text?: string; partial_json?: string };
      if (delta.type === "text_delta") blocks[index]!.text = `${blocks[index]!.text as string}${delta.text}`;
      else json[index] += delta.partial_json ?? "";
    } else if (data.type === "content_block_stop" && blocks[index]!.type === "tool_use") {
      blocks[index]!.input = JSON.parse(json[index]!);
    }
  }
  return blocks;
}

describe("ModelDouble", () => {
  it("listens on 127.0.0.1 with an OS-chosen port and answers probes with 200", async () => {
    double = await ModelDouble.start();
    expect(double.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect((await fetch(`${double.url}/api/hello`, { method: "HEAD" })).status).toBe(200);
    expect((await fetch(`${double.url}/`)).status).toBe(200);
    const models = await fetch(`${double.url}/v1/models`);
    expect(models.status).toBe(200);
    expect(await models.json()).toMatchObject({ data: [] });
    const count = await post(double.url, { model: "m", messages: [{ role: "user", content: "hello there" }] }, "/v1/messages/count_tokens?beta=true");
    expect(await count.json()).toEqual({ input_tokens: expect.any(Number) });
    expect(double.requests.map((r) => [r.method, r.path, r.kind])).toEqual([
      ["HEAD", "/api/hello", RequestKind.probe],
      ["GET", "/", RequestKind.probe],
      ["GET", "/v1/models", RequestKind.probe],
      ["POST", "/v1/messages/count_tokens", RequestKind.countTokens],
    ]);
  });

  it("replies with a JSON message when not streaming, tool_use blocks ending the turn with stop_reason tool_use", async () => {
    double = await ModelDouble.start([{ reply: ["Let me echo.", { tool: "mcp__tiny__echo", input: { text: "hi" } }] }]);
    const res = await post(double.url, { model: "claude-x", max_tokens: 100, tools: TOOLS, messages: [{ role: "user", content: "go" }] });
    expect(res.headers.get("content-type")).toContain("application/json");
    const message = (await res.json()) as Record<string, unknown>;
    expect(message).toMatchObject({
      type: "message",
      role: "assistant",
      model: "claude-x",
      stop_reason: "tool_use",
      content: [
        { type: "text", text: "Let me echo." },
        { type: "tool_use", name: "mcp__tiny__echo", input: { text: "hi" }, id: expect.stringMatching(/^toolu_/) },
      ],
      usage: { input_tokens: expect.any(Number), output_tokens: expect.any(Number) },
    });
    expect(message.id).toMatch(/^msg_/);
  });

  it("streams the Messages SSE event sequence that reassembles into the scripted reply", async () => {
    double = await ModelDouble.start([{ reply: ["Hello, streaming world.", { tool: "mcp__tiny__echo", input: { text: "deep", n: [1, 2] } }] }]);
    const res = await post(double.url, { model: "m", stream: true, tools: TOOLS, messages: [{ role: "user", content: "go" }] });
    expect(res.headers.get("content-type")).toContain("text/event-stream");
    const events = parseSse(await res.text());
    expect(events.every((e) => e.event === e.data.type)).toBe(true);
    expect(events.map((e) => e.event)).toEqual([
      "message_start",
      "content_block_start",
      "content_block_delta",
      "content_block_delta",
      "content_block_stop",
      "content_block_start",
      "content_block_delta",
      "content_block_delta",
      "content_block_stop",
      "message_delta",
      "message_stop",
    ]);
    expect(events[0]!.data.message).toMatchObject({ role: "assistant", content: [], stop_reason: null });
    expect(events.filter((e) => e.event === "content_block_delta").map((e) => (e.data.delta as { type: string }).type)).toEqual([
      "text_delta",
      "text_delta",
      "input_json_delta",
      "input_json_delta",
    ]);
    expect(assemble(events)).toEqual([
      { type: "text", text: "Hello, streaming world." },
      { type: "tool_use", id: expect.stringMatching(/^toolu_/), name: "mcp__tiny__echo", input: { text: "deep", n: [1, 2] } },
    ]);
    expect(events.at(-2)!.data).toMatchObject({ delta: { stop_reason: "tool_use" }, usage: { output_tokens: expect.any(Number) } });
  });

  it("advances past a step keyed on a tool result only once that tool's result arrives", async () => {
    double = await ModelDouble.start([
      { reply: [{ tool: "mcp__tiny__echo", input: { text: "x" }, id: "toolu_fixed" }] },
      { afterToolResult: "mcp__tiny__echo", reply: ["Got it."] },
    ]);
    const first = (await (await post(double.url, { model: "m", tools: TOOLS, messages: [{ role: "user", content: "go" }] })).json()) as {
      content: Array<{ type: string }>;
    };
    expect(first.content[0]).toMatchObject({ type: "tool_use", id: "toolu_fixed" });

    // A main-loop request without the tool result: default reply, the step stays due.
    const early = (await (await post(double.url, { model: "m", tools: TOOLS, messages: [{ role: "user", content: "again" }] })).json()) as {
      content: Array<{ text?: string }>;
      stop_reason: string;
    };
    expect(early).toMatchObject({ stop_reason: "end_turn", content: [{ text: DEFAULT_REPLY_TEXT }] });
    expect(double.remainingSteps).toBe(1);

    const withResult: MessagesBody = {
      model: "m",
      tools: TOOLS,
      messages: [
        { role: "user", content: "go" },
        { role: "assistant", content: [{ type: "tool_use", id: "toolu_fixed", name: "mcp__tiny__echo", input: { text: "x" } }] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_fixed", content: [{ type: "text", text: "echo: x" }] }] },
      ],
    };
    const second = (await (await post(double.url, withResult)).json()) as { content: Array<{ text?: string }>; stop_reason: string };
    expect(second).toMatchObject({ stop_reason: "end_turn", content: [{ type: "text", text: "Got it." }] });
    expect(double.remainingSteps).toBe(0);

    const main = double.mainRequests;
    expect(main.map((r) => r.step)).toEqual([0, undefined, 1]);
    expect(toolResults(main[2]!)).toEqual([{ toolUseId: "toolu_fixed", name: "mcp__tiny__echo", text: "echo: x", isError: false }]);
    expect(newToolResults(main[2]!)).toHaveLength(1);
    expect(newToolResults(main[0]!)).toHaveLength(0);

    // Exhausted: a short default end_turn text.
    const after = (await (await post(double.url, withResult)).json()) as { content: Array<{ text?: string }> };
    expect(after.content).toEqual([{ type: "text", text: DEFAULT_REPLY_TEXT }]);
  });

  it("gives side requests (no tools) a default reply without consuming script steps", async () => {
    double = await ModelDouble.start([{ reply: ["Main loop reply."] }]);
    const title = (await (
      await post(double.url, {
        model: "m",
        tools: [],
        system: [{ type: "text", text: "You are naming a coding session" }],
        messages: [{ role: "user", content: "<session>go</session>" }],
        output_config: { format: { type: "json_schema", schema: { type: "object", properties: { title: { type: "string" } }, required: ["title"] } } },
      })
    ).json()) as { content: Array<{ text: string }> };
    expect(JSON.parse(title.content[0]!.text)).toEqual({ title: DEFAULT_REPLY_TEXT });
    const quota = (await (await post(double.url, { model: "m", max_tokens: 1, messages: [{ role: "user", content: "quota" }] })).json()) as {
      content: Array<{ text: string }>;
    };
    expect(quota.content[0]!.text).toBe(DEFAULT_REPLY_TEXT);
    expect(double.remainingSteps).toBe(1);
    const main = (await (await post(double.url, { model: "m", tools: TOOLS, messages: [{ role: "user", content: "go" }] })).json()) as {
      content: Array<{ text: string }>;
    };
    expect(main.content[0]!.text).toBe("Main loop reply.");
    expect(double.sideRequests).toHaveLength(2);
    expect(double.mainRequests).toHaveLength(1);
  });

  it("records what the model was shown: headers, system, messages, tool results and hook context", async () => {
    double = await ModelDouble.start([{ when: (req) => allText(req).includes("MARKER-7"), reply: ["Saw the marker."] }]);
    const body: MessagesBody = {
      model: "m",
      tools: TOOLS,
      system: [
        { type: "text", text: "You are a test agent." },
        { type: "text", text: "Be brief." },
      ],
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "<system-reminder>ctx</system-reminder>" },
            { type: "text", text: "question" },
          ],
        },
        { role: "system", content: "SessionStart hook additional context: MARKER-7" },
        { role: "assistant", content: [{ type: "tool_use", id: "toolu_1", name: "mcp__tiny__echo", input: { text: "q" } }] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "echo: q", is_error: true }] },
      ],
    };
    const res = (await (await post(double.url, body)).json()) as { content: Array<{ text: string }> };
    expect(res.content[0]!.text).toBe("Saw the marker.");
    const [req] = double.requests;
    expect(req!.headers["x-api-key"]).toBe("dummy");
    expect(req!.query).toBe("beta=true");
    expect(systemText(req!)).toBe("You are a test agent.\nBe brief.");
    expect(toolNames(req!)).toEqual(["mcp__tiny__echo"]);
    const text = allText(req!);
    for (const piece of ["You are a test agent.", "<system-reminder>ctx", "question", "MARKER-7", '{"text":"q"}', "echo: q"]) {
      expect(text).toContain(piece);
    }
    expect(toolResults(req!)).toEqual([{ toolUseId: "toolu_1", name: "mcp__tiny__echo", text: "echo: q", isError: true }]);
    expect(req!.reply).toEqual([{ type: "text", text: "Saw the marker." }]);
  });

  it("holds a delayed reply until its time, and close() abandons it", async () => {
    double = await ModelDouble.start([
      { delayMs: 150, reply: ["late"] },
      { delayMs: 60_000, reply: ["never"] },
    ]);
    const started = Date.now();
    const res = (await (await post(double.url, { model: "m", tools: TOOLS, messages: [{ role: "user", content: "go" }] })).json()) as {
      content: Array<{ text: string }>;
    };
    expect(res.content[0]!.text).toBe("late");
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);

    const hanging = post(double.url, { model: "m", tools: TOOLS, messages: [{ role: "user", content: "go" }] }).then(
      () => "answered",
      () => "cut",
    );
    await until(() => double!.requests.length === 2, 5_000, "the delayed request to reach the double");
    const closing = Date.now();
    await double.close();
    double = undefined;
    expect(await hanging).toBe("cut");
    expect(Date.now() - closing).toBeLessThan(2_000);
  });
});

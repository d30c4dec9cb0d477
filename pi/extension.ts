// Cotal's pi extension (docs/runtimes.md): pi 0.73.1 loads it (`-e <file>`, or from the
// `extensions` list of a user's settings.json after `cotal setup --runtime pi`) and runs it inside
// its own process. pi has neither MCP nor a permission system of its own: this file brings both.
//
// - In a seat or a hand-started session it starts the connector as an MCP server over stdio (the
//   SDK's client) and registers each of its tools as a pi tool of the same name (`cotal_dm`, …).
// - It relays pi's events to the connector through the hook command every runtime runs
//   (runtime/hook-relay.ts): a prompt about to start the agent (`before_agent_start`) is
//   UserPromptSubmit, and for the session's first prompt SessionStart; what they answer as
//   additionalContext (identity, then the framed mail) goes to the model as a message of this
//   turn. `tool_call` is PreToolUse, `agent_end` Stop (StopFailure when the turn ended in an
//   error), `session_shutdown` SessionEnd.
// - It holds the posture (posture.ts): the deny floor and an allow-list block a call before it
//   runs, with a sentence the model reads as the tool's result. In a run (`COTAL_PI_MODE=run`)
//   that is all it does.
// - It journals the session for the event plane (journal.ts) beside pi's sessions; SessionStart
//   names that file as the session's transcript.
import { randomUUID } from "node:crypto";
import { appendFileSync, createWriteStream, mkdirSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { connectorCommand, hookEntryOf, relayHook, RUNTIME_ENV, type HookCommand } from "../runtime/index.js";
import { MODE_ENV } from "./extension-env.js";
import { journalRecords, type PiMessage } from "./journal.js";
import { POSTURE_ENV, postureFromEnv, refusalOf } from "./posture.js";

/** The runtime's name (the card's `runtime`). */
const RUNTIME = "pi";
/** Longest a Cotal tool call may take (a wait for mail may be long; the model's turn waits for it). */
const TOOL_TIMEOUT_MS = 30 * 60_000;

/** What pi hands an extension (the members used here, 0.73.1). */
export interface PiExtensionApi {
  /** `event` is the event's payload as pi hands it (each handler names the fields it reads). */
  on(event: string, handler: (event: never, ctx: PiContext) => unknown): void;
  registerTool(tool: {
    name: string;
    label: string;
    description: string;
    parameters: unknown;
    execute(id: string, params: unknown, signal?: AbortSignal): Promise<{ content: Array<{ type: "text"; text: string }>; details: unknown }>;
  }): void;
}

interface PiContext {
  cwd: string;
  sessionManager: { getSessionId(): string };
  model?: { provider?: string; id?: string };
  ui?: { notify?(message: string, level?: string): void };
}

/** pi's agent folder (`$PI_CODING_AGENT_DIR`, default `~/.pi/agent`): the journals go beside its sessions. */
function agentDir(): string {
  const named = process.env.PI_CODING_AGENT_DIR;
  return named && path.isAbsolute(named) ? named : path.join(os.homedir(), ".pi", "agent");
}

/** The folder this bundle is in: the connector's bundles are beside it (the plugin's bin/, or dist/). */
function bundleDir(): string {
  return path.dirname(fileURLToPath(import.meta.url));
}

/** Append records to a session's journal in one write (never throws: the session goes on without its plane). */
function journal(file: string, records: unknown[]): void {
  if (!records.length) return;
  try {
    mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    appendFileSync(file, records.map((r) => `${JSON.stringify(r)}\n`).join(""), { mode: 0o600 });
  } catch {
    // a full or read-only disk: the plane misses this, the session does not
  }
}

/** The text of an MCP tool result's content. */
function textOf(content: unknown): string {
  return Array.isArray(content)
    ? content.map((c: { type?: unknown; text?: unknown }) => (c?.type === "text" && typeof c.text === "string" ? c.text : "")).join("\n")
    : "";
}

/** Start the connector as an MCP server and register its tools; undefined (and why) when it could not start. */
async function startConnector(pi: PiExtensionApi, connectorEntry: string): Promise<{ client?: Client; problem?: string }> {
  const managed = !!process.env.COTAL_LAUNCH_MATERIAL?.trim();
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v;
  // The card's runtime (a managed seat's launch material names it too, and wins); a managed seat joins as the connector starts.
  env[RUNTIME_ENV] = RUNTIME;
  if (managed) env.COTAL_JOIN_ON = "start";
  const c = connectorCommand(connectorEntry);
  const transport = new StdioClientTransport({ command: c.command, args: c.args, env, stderr: managed ? "pipe" : "ignore" });
  if (managed) {
    // The connector logs to stderr: in a managed seat into a file beside the sessions, never onto pi's screen.
    const dir = path.join(agentDir(), "cotal");
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    transport.stderr?.pipe(createWriteStream(path.join(dir, "connector.log"), { flags: "a", mode: 0o600 }));
  }
  const client = new Client({ name: "cotal-pi", version: "1" });
  try {
    await client.connect(transport);
    const registered = new Set<string>();
    const register = async (): Promise<void> => {
      const { tools } = await client.listTools();
      for (const t of tools) {
        if (registered.has(t.name)) continue;
        registered.add(t.name);
        pi.registerTool({
          name: t.name,
          label: t.title ?? t.name,
          description: t.description ?? t.name,
          parameters: t.inputSchema,
          async execute(_id, params, signal) {
            const r = await client.callTool({ name: t.name, arguments: (params ?? {}) as Record<string, unknown> }, undefined, {
              timeout: TOOL_TIMEOUT_MS,
              ...(signal ? { signal } : {}),
            });
            const text = textOf(r.content);
            // A tool that failed for a domain reason: pi reports a thrown error to the model as the tool's error result.
            if (r.isError) throw new Error(text || `${t.name} failed.`);
            return { content: [{ type: "text", text }], details: {} };
          },
        });
      }
    };
    // A connector that joins later (a hand-started session's cotal_join) offers its full tool set then: pi registers the new ones.
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => register().catch(() => undefined));
    await register();
    return { client };
  } catch (err) {
    await client.close().catch(() => undefined);
    return { problem: `Cotal's connector did not start: ${(err as Error).message}` };
  }
}

export default async function cotal(pi: PiExtensionApi): Promise<void> {
  const posture = postureFromEnv(process.env[POSTURE_ENV]);
  pi.on("tool_call", (event: { toolName?: unknown; input?: unknown }) => {
    const reason = refusalOf(posture, String(event.toolName ?? ""), event.input);
    return reason ? { block: true, reason } : undefined;
  });
  if (process.env[MODE_ENV] === "run") return;

  const dir = bundleDir();
  const hook: HookCommand = { node: process.execPath, hook: hookEntryOf(path.join(dir, "connector.mjs")) };
  const { client, problem } = await startConnector(pi, path.join(dir, "connector.mjs"));
  let started = false;
  const session = (ctx: PiContext) => ({ session_id: ctx.sessionManager.getSessionId(), cwd: ctx.cwd });
  const journalOf = (ctx: PiContext) => path.join(agentDir(), "cotal", `${ctx.sessionManager.getSessionId()}.jsonl`);

  pi.on("session_start", (_event: unknown, ctx: PiContext) => {
    started = false;
    if (problem) ctx.ui?.notify?.(problem, "error");
  });
  pi.on("before_agent_start", async (event: { prompt?: unknown }, ctx: PiContext) => {
    const base = session(ctx);
    const contexts: string[] = [];
    // UserPromptSubmit first: it says the seat is working at once.
    const submitted = await relayHook(hook, "UserPromptSubmit", { ...base, prompt: typeof event.prompt === "string" ? event.prompt : "" });
    if (submitted) contexts.push(submitted);
    if (!started) {
      started = true;
      const model = ctx.model?.provider && ctx.model.id ? `${ctx.model.provider}/${ctx.model.id}` : undefined;
      const start = await relayHook(hook, "SessionStart", { ...base, source: "startup", transcript_path: journalOf(ctx), ...(model ? { model } : {}) });
      if (start) contexts.unshift(start);
    }
    if (!contexts.length) return undefined;
    return { message: { customType: "cotal", content: contexts.join("\n\n"), display: true } };
  });
  pi.on("tool_call", async (event: { toolName?: unknown }, ctx: PiContext) => {
    await relayHook(hook, "PreToolUse", { ...session(ctx), tool_name: String(event.toolName ?? "") });
  });
  pi.on("message_end", (event: { message?: PiMessage }, ctx: PiContext) => {
    if (event.message) journal(journalOf(ctx), journalRecords(event.message, randomUUID, new Date().toISOString()));
  });
  pi.on("agent_end", async (event: { messages?: PiMessage[] }, ctx: PiContext) => {
    const last = [...(event.messages ?? [])].reverse().find((m) => m.role === "assistant");
    if (last?.stopReason === "error") await relayHook(hook, "StopFailure", { ...session(ctx), error: "unknown" });
    else await relayHook(hook, "Stop", { ...session(ctx), stop_hook_active: false });
  });
  pi.on("session_shutdown", async (event: { reason?: unknown }, ctx: PiContext) => {
    const reason = typeof event.reason === "string" ? event.reason : "quit";
    if (started) await relayHook(hook, "SessionEnd", { ...session(ctx), reason: reason === "quit" ? "prompt_input_exit" : "other" });
    // This extension instance is torn down with its session: pi runs a new one for a replacing
    // session (new, resume, fork, reload), which starts its own connector; this one's goes first.
    await client?.close().catch(() => undefined);
  });
}

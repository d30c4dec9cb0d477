// Cotal's plugin for the OpenCode family (docs/runtimes.md): OpenCode 1.18.33 and Kilo Code 7.7.7
// load it from the `plugin` list of their config (`["file://…/<cli>-plugin.mjs", { node, hook }]`)
// and run it inside their own process. Each CLI has its own bundle (`<cli>/plugin.ts`), which names
// the CLI's data folder. It relays the CLI's plugin hooks and events to the connector through the
// same hook command Claude and Codex run (`node hook.mjs <Event>`, a Claude-shaped payload on
// stdin), so the connector's hand-over, ack and presence rules are the ones every runtime has:
//
// - `chat.message` (a prompt of a main session is about to be saved and sent): UserPromptSubmit,
//   then for a session's first prompt SessionStart; what the hooks answer as additionalContext
//   (SessionStart's first: identity, then the framed mail) is added to the prompt as synthetic
//   text parts before the CLI saves and sends it. A hook confirms (and the connector acks) only
//   after it wrote its answer to us.
// - `tool.execute.before`: PreToolUse with the tool's name (never its arguments).
// - `permission.asked`: in a managed seat (`unattended`) the request is refused at once, as
//   `<cli> run` refuses it headless; in a hand-started session, Notification
//   `permission_prompt` (presence waiting for the person's approval).
// - `session.error`: StopFailure; `session.idle`: Stop (unless the turn already failed).
//
// It also journals each main session for the event plane (journal.ts): the prompt, the model's
// texts, each tool call by name and its end, the turn's end, appended to
// `$XDG_DATA_HOME/<app>/cotal/<session>.jsonl` (0600) before the hook that tells the connector
// about it; SessionStart names that file as the session's transcript.
//
// Keep this file to node built-ins: it is bundled alone and runs under the CLI's Bun.
import { appendFileSync, mkdirSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { relayHook as relay } from "../hook-relay.js";
import type { TranscriptRecord } from "../transcript-record.js";
import { JOURNAL_SESSION, SessionJournal, type OpencodeEvent } from "./journal.js";

/** What the CLI hands a plugin (the fields read here). */
interface PluginInput {
  directory: string;
  /** The CLI's SDK client (OpenCode's v1 in 1.18.33, and Kilo's): answers a permission request. */
  client?: {
    postSessionIdPermissionsPermissionId?: (o: { path: { id: string; permissionID: string }; body: { response: string } }) => Promise<unknown>;
  };
}

/** A text part of a user message, as the family saves it. */
interface TextPart {
  id: string;
  sessionID: string;
  messageID: string;
  type: "text";
  text: string;
  synthetic?: boolean;
}

interface ChatMessageOutput {
  message: { id: string; sessionID: string; model?: { providerID?: string; modelID?: string } };
  parts: Array<{ type: string; text?: string; synthetic?: boolean }>;
}

/** The CLI's data folder `<app>`, where its own sessions are (`$XDG_DATA_HOME`, default `~/.local/share`): the journals go beside them. */
function journalDir(app: string): string {
  const data = process.env.XDG_DATA_HOME;
  return path.join(data && path.isAbsolute(data) ? data : path.join(os.homedir(), ".local", "share"), app, "cotal");
}

/** A session's journal file in `dir`, or undefined for an id that cannot be a file name. */
function journalOf(dir: string, sessionID: string): string | undefined {
  return JOURNAL_SESSION.test(sessionID) ? path.join(dir, `${sessionID}.jsonl`) : undefined;
}

/** Append records to a session's journal in one write (never throws: the session goes on without its plane). */
function journal(dir: string, sessionID: string, records: TranscriptRecord[]): void {
  const file = journalOf(dir, sessionID);
  if (!file || !records.length) return;
  try {
    mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    appendFileSync(file, records.map((r) => `${JSON.stringify(r)}\n`).join(""), { mode: 0o600 });
  } catch {
    // a full or read-only disk: the plane misses this, the session does not
  }
}

/** The options Cotal writes next to the plugin's file in the config. */
export interface CotalPluginOptions {
  /** The Node.js executable that runs the hook command. */
  node?: string;
  /** The connector's hook bundle (hook.mjs). */
  hook?: string;
  /** A managed seat: nobody answers a permission prompt, so the plugin refuses it at once (as `<cli> run` does headless). */
  unattended?: boolean;
}

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
let lastMs = 0;
let counter = 0;

/** A part id as the family makes them (`prt_`, 12 hex digits of time and counter, 14 random base62): ascending, so the mail sorts after the prompt. */
function partId(): string {
  const now = Date.now();
  if (now !== lastMs) {
    lastMs = now;
    counter = 0;
  }
  counter++;
  const hex = (BigInt(now) * 0x1000n + BigInt(counter)).toString(16).padStart(12, "0").slice(-12);
  let rand = "";
  for (let i = 0; i < 14; i++) rand += BASE62[Math.floor(Math.random() * 62)];
  return `prt_${hex}${rand}`;
}

/** StopFailure's `error` word for a session error (presence condition; unknown reads as failed). */
function failureWord(error: unknown): string {
  const e = (error ?? {}) as { name?: unknown; data?: { statusCode?: unknown; message?: unknown } };
  const status = typeof e.data?.statusCode === "number" ? e.data.statusCode : undefined;
  const message = typeof e.data?.message === "string" ? e.data.message : "";
  if (e.name === "ProviderAuthError" || status === 401 || status === 403) return "authentication_failed";
  if (status === 429) return "rate_limit";
  if (status === 529 || /overloaded/i.test(message)) return "overloaded";
  if (e.name === "MessageOutputLengthError") return "max_output_tokens";
  if (e.name === "ContextOverflowError" || /context|too long/i.test(message)) return "context_window_exceeded";
  if (/model not found/i.test(message)) return "model_not_found";
  if (typeof status === "number" && status >= 500) return "server_error";
  return "unknown";
}

/** Cotal's plugin for the family CLI whose data folder is `app` (`opencode`, `kilo`). */
export const cotalPluginFor = (app: string) => async (input: PluginInput, options?: CotalPluginOptions) => {
  if (!options?.node || !options.hook) return {};
  const dir = journalDir(app);
  const o = { node: options.node, hook: options.hook };
  const cwd = input.directory;
  /** Sessions a prompt has started (SessionStart sent). */
  const started = new Set<string>();
  /** Subagent sessions (they have a parent): their prompts hand over no mail, their tools are a subagent's. */
  const children = new Set<string>();
  /** Sessions whose current turn failed (StopFailure sent; the idle after it is not a Stop). */
  const failed = new Set<string>();
  const journaled = new SessionJournal();

  return {
    "chat.message": async (i: { sessionID: string }, out: ChatMessageOutput): Promise<void> => {
      if (children.has(i.sessionID)) return;
      failed.delete(i.sessionID);
      const base = { session_id: i.sessionID, cwd };
      const contexts: string[] = [];
      const prompt = out.parts
        .filter((p) => p.type === "text" && !p.synthetic)
        .map((p) => p.text ?? "")
        .join("\n");
      // Journaled before any hook: the mail a hook hands over below is not part of it.
      journal(dir, i.sessionID, journaled.prompt(i.sessionID, out.message.id, prompt));
      // UserPromptSubmit first: it says the seat is working at once. A manager types its wake line
      // again into a seat still idle with mail 15 s later; on a loaded host a first prompt's two hook
      // rounds outlasted that while the TUI still showed its home screen, where the second
      // wake line started a second session.
      const ctx = await relay(o, "UserPromptSubmit", { ...base, prompt });
      if (ctx) contexts.push(ctx);
      if (!started.has(i.sessionID)) {
        started.add(i.sessionID);
        const m = out.message.model;
        const model = m?.providerID && m.modelID ? `${m.providerID}/${m.modelID}` : undefined;
        const transcript = journalOf(dir, i.sessionID);
        const start = await relay(o, "SessionStart", {
          ...base,
          source: "startup",
          ...(model ? { model } : {}),
          ...(transcript ? { transcript_path: transcript } : {}),
        });
        if (start) contexts.unshift(start);
      }
      for (const text of contexts) {
        const part: TextPart = { id: partId(), sessionID: i.sessionID, messageID: out.message.id, type: "text", text, synthetic: true };
        out.parts.push(part);
      }
    },
    "tool.execute.before": async (i: { tool: string; sessionID: string }): Promise<void> => {
      await relay(o, "PreToolUse", {
        session_id: i.sessionID,
        cwd,
        tool_name: i.tool,
        ...(children.has(i.sessionID) ? { agent_id: i.sessionID } : {}),
      });
    },
    event: async ({ event }: { event: OpencodeEvent }): Promise<void> => {
      const p = event.properties ?? {};
      const sessionID = typeof p.sessionID === "string" ? p.sessionID : undefined;
      if (event.type === "session.created") {
        const info = p.info as { id?: unknown; parentID?: unknown } | undefined;
        if (typeof info?.id === "string" && typeof info.parentID === "string") children.add(info.id);
        return;
      }
      if (!sessionID || children.has(sessionID)) return;
      journal(dir, sessionID, journaled.event(event));
      if (event.type === "permission.asked") {
        const id = typeof p.id === "string" ? p.id : undefined;
        const client = input.client;
        if (options.unattended && id && typeof client?.postSessionIdPermissionsPermissionId === "function") {
          // Called as the client's method (it reads its own transport from `this`).
          try {
            await client.postSessionIdPermissionsPermissionId({ path: { id: sessionID, permissionID: id }, body: { response: "reject" } });
          } catch {
            // the prompt stays; presence has nothing better to say than before
          }
          return;
        }
        await relay(o, "Notification", { session_id: sessionID, cwd, notification_type: "permission_prompt" });
      } else if (event.type === "session.error") {
        failed.add(sessionID);
        journal(dir, sessionID, journaled.turnEnded(sessionID, "failed"));
        await relay(o, "StopFailure", { session_id: sessionID, cwd, error: failureWord(p.error) });
      } else if (event.type === "session.idle") {
        if (failed.delete(sessionID)) return;
        journal(dir, sessionID, journaled.turnEnded(sessionID, "finished"));
        await relay(o, "Stop", { session_id: sessionID, cwd, stop_hook_active: false });
      }
    },
  };
};

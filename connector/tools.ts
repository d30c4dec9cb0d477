// The connector's MCP tools. Arguments are closed (unknown keys are refused) and identity never
// comes from an argument: every tool acts as the seat's own principal. A domain failure returns
// a tool error with a sentence the model can act on; only protocol misuse throws. The tools see
// the seat only through ToolSeat, and take every sentence they return from model-text.ts.
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { CotalMcpServer } from "./mcp-server.js";
import type { CallToolResult, RequestId } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { PermissionDeniedError, permissionViolation, type Receipt } from "../broker/index.js";
import {
  Attention,
  ChannelMode,
  ChannelName,
  COTAL_VERSION,
  CotalError,
  LIMITS,
  LOCAL_OWNER,
  parseDuration,
  PresenceStatus,
  PrincipalToken,
  RoleName,
  TaskMarker,
  type CotalMessage,
} from "../schemas/index.js";
import { frameMessage } from "./framing.js";
import { JsonSchemaArg } from "./json-schema-arg.js";
import * as text from "./model-text.js";
import type { Seat } from "./seat.js";
import { registerSpawnTools } from "./spawn-tools.js";

/** What the tools may do with the seat: send, read its inbox, its channels and status, dispatch runs. */
export type ToolSeat = Pick<
  Seat,
  | "id"
  | "facts"
  | "activate"
  | "send"
  | "dm"
  | "anycast"
  | "roster"
  | "takeWindow"
  | "replyBudget"
  | "setPresence"
  | "setAttention"
  | "status"
  | "joinedChannels"
  | "joinChannel"
  | "leaveChannel"
  | "listChannels"
  | "channelMode"
  | "setChannelMode"
  | "history"
  | "run"
  | "helpers"
>;

/** Acks of `cotal_inbox` replies: the front acks a hand-over once the reply to `id` was written. */
export interface ReplyReceipts {
  awaitReply(id: RequestId, handover: string): void;
}

/** Argument names that would let a caller claim an identity: always refused with an explanation. */
export const IDENTITY_KEYS = [
  "from",
  "sender",
  "as",
  "identity",
  "name",
  "owner",
  "actor",
  "me",
  "self",
  "principal",
  "user",
  "agent",
  "author",
  "seat",
  "on_behalf_of",
  "onBehalfOf",
  "from_id",
  "fromId",
  "sender_id",
  "senderId",
] as const;

/** A closed argument object: unknown keys are refused; identity-like keys with a sentence saying why. */
function closed<T extends z.ZodRawShape>(tool: string, who: () => string, shape: T) {
  const allowed = Object.keys(shape);
  return z.strictObject(shape, {
    error: (iss) => {
      if (iss.code !== "unrecognized_keys") return undefined;
      const keys = (iss as { keys: string[] }).keys;
      const identity = keys.filter((k) => (IDENTITY_KEYS as readonly string[]).includes(k));
      return text.refusedArgumentsText(tool, who(), keys, identity, allowed);
    },
  });
}

const ok = (t: string): CallToolResult => ({ content: [{ type: "text", text: t }] });
const fail = (t: string): CallToolResult => ({ content: [{ type: "text", text: t }], isError: true });

/** Run a tool body; domain errors become tool errors with their sentence. */
async function runDomain(what: string, fn: () => Promise<CallToolResult>): Promise<CallToolResult> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof CotalError) return fail(err.message);
    // The broker's refusal (a JetStream publish's request error carries it): a refusal, not an unreachable mesh.
    const denied = permissionViolation(err);
    if (denied) return fail(new PermissionDeniedError(denied.operation === "subscription" ? "subscribe" : "publish", denied.subject, err).message);
    return fail(text.toolFailureText(what, err instanceof Error ? err.message : String(err)));
  }
}

const Text = z.string().min(1, "text must not be empty").describe("The message text.");

/**
 * The structured result of the send tools: the broker's receipt as data, and `text`, the line the
 * model reads. Claude Code shows a model the structured content (as JSON) in place of the text
 * content when both are present, so the sentence travels inside it too.
 */
const SentOutput = z.object({
  id: z.string().describe("The message id."),
  stream: z.string().describe("The stream that stored it."),
  seq: z.number().int().describe("Its sequence in that stream."),
  duplicate: z.boolean().describe("The broker had already stored this id."),
  target: z
    .discriminatedUnion("kind", [
      z.object({
        kind: z.literal("channel"),
        channel: z.string(),
        onlineMembers: z.number().int().nullable().describe("Other members online at send; null: unknown."),
      }),
      z.object({
        kind: z.literal("dm"),
        to: z.string(),
        recipient: z.union([PresenceStatus, z.enum(["not-joined", "unknown"])]).describe("The recipient's status at send."),
      }),
      z.object({ kind: z.literal("anycast"), role: z.string(), holders: z.number().int().nullable().describe("Holders online at send; null: unknown.") }),
    ])
    .describe("Who it was for and what was known of them at send (never that it was read)."),
  text: z.string().describe("The receipt in a sentence."),
});

/** A send tool's result: the sentence as text, the receipt as structured content. */
function sent(r: Receipt, me: string): CallToolResult {
  const line = text.sentLine(r, me);
  return { content: [{ type: "text", text: line }], structuredContent: { ...r, text: line } };
}

/** Build the MCP server of a seat. */
export function buildMcpServer(c: ToolSeat, replies: ReplyReceipts): CotalMcpServer {
  const server = new CotalMcpServer(
    { name: "cotal", version: COTAL_VERSION },
    { capabilities: { experimental: { "claude/channel": {} }, tools: {} }, instructions: text.serverInstructions(c.facts()) },
  );
  const who = () => c.id;
  // A tool call means a session is using this seat: join the mesh first (see Seat.activate).
  const domain = (what: string, fn: () => Promise<CallToolResult>) =>
    runDomain(what, async () => {
      await c.activate("tool call");
      return fn();
    });

  server.registerTool(
    "cotal_send",
    {
      description: "Post a message on a channel of the Cotal mesh. Mentions (peer names from cotal_roster) wake those peers.",
      inputSchema: closed("cotal_send", who, {
        channel: ChannelName.describe("Channel name, e.g. general or team.backend."),
        text: Text,
        mentions: z.array(z.string().min(1)).max(LIMITS.maxMentions).optional().describe("Names of peers (as in cotal_roster) to wake."),
      }),
      outputSchema: SentOutput,
    },
    ({ channel, text: body, mentions }) => domain(`post on #${channel}`, async () => sent(await c.send(channel, body, mentions), c.id)),
  );

  server.registerTool(
    "cotal_dm",
    {
      description: "Send a direct message to one peer (an actor name, or <owner>.<actor>). It waits for them if they are busy or offline.",
      inputSchema: closed("cotal_dm", who, { to: z.string().min(1).describe("The recipient: a name from cotal_roster."), text: Text }),
      outputSchema: SentOutput,
    },
    ({ to, text: body }) =>
      domain(`DM ${to}`, async () => {
        const target = to.includes(".") ? to : `${LOCAL_OWNER}.${to}`; // a bare name is a local principal
        if (target === c.id) return fail(text.dmSelfText(c.id));
        return sent(await c.dm(to, body), c.id);
      }),
  );

  server.registerTool(
    "cotal_anycast",
    {
      description: "Send a message to any one holder of a role (a work queue): exactly one holder gets it.",
      inputSchema: closed("cotal_anycast", who, { role: RoleName.describe("The role, e.g. reviewer."), text: Text }),
      outputSchema: SentOutput,
    },
    ({ role, text: body }) => domain(`anycast to ${role}`, async () => sent(await c.anycast(role, body), c.id)),
  );

  server.registerTool(
    "cotal_inbox",
    {
      description:
        "Read waiting mail (directed first, then channels, then muted channels and history). Returns a bounded window and clears only what it returned; a very long message comes in parts.",
      inputSchema: closed("cotal_inbox", who, {}),
    },
    (_args, extra) =>
      domain("read the inbox", async () => {
        const { sel, returned } = c.takeWindow();
        const footer = text.waitingLine(sel, returned);
        if (!sel.handover) return ok([text.INBOX_EMPTY, footer].filter(Boolean).join(" "));
        replies.awaitReply(extra.requestId, sel.handover.id);
        return ok([text.inboxHead(c.id, sel.handover.entries.length, sel.handover.part), ...sel.text, footer ?? text.NOTHING_ELSE_WAITS].join("\n"));
      }),
  );

  server.registerTool(
    "cotal_roster",
    {
      description: "Who is on the mesh: each peer's status (idle, waiting, working, offline), role, activity and attention.",
      inputSchema: closed("cotal_roster", who, {}),
    },
    () =>
      domain("read the roster", async () => {
        const roster = await c.roster();
        const now = Date.now();
        const entries = roster.entries(now).map((e) => ({
          id: e.id,
          status: e.status,
          ...(e.role ? { role: e.role } : {}),
          ...(e.presence.condition ? { condition: e.presence.condition } : {}),
          ...(e.presence.activity ? { activity: e.presence.activity } : {}),
          attention: e.presence.attention,
          ...(e.presence.unread ? { unread: e.presence.unread } : {}),
          channels: e.presence.channels,
          ...(e.presence.card.description ? { description: e.presence.card.description } : {}),
          seenAgoMs: now - e.seenAt,
        }));
        return ok(text.rosterText(c.facts().space, c.id, entries));
      }),
  );

  server.registerTool(
    "cotal_status",
    {
      description:
        "Show this seat's status, or set it: status (idle, waiting, working), attention (open: wake on anything; focus: only directed mail; dnd: nothing wakes), activity (a short label).",
      inputSchema: closed("cotal_status", who, {
        status: z.enum(["idle", "waiting", "working"]).optional(),
        attention: Attention.optional(),
        activity: z.string().max(200).optional().describe("What you are doing, in a few words; empty clears it."),
      }),
    },
    ({ status, attention, activity }) =>
      domain("set status", async () => {
        if (status || activity !== undefined) {
          await c.setPresence({ ...(status ? { status } : {}), ...(activity !== undefined ? { activity: activity.trim() ? activity : null } : {}) });
        }
        if (attention) await c.setAttention(attention);
        return ok(text.statusText(c.status()));
      }),
  );

  server.registerTool(
    "cotal_join",
    {
      description: "Join a channel: its posts reach you from now on (durable channels hold them while you are away), and recent history lands in your inbox.",
      inputSchema: closed("cotal_join", who, { channel: ChannelName }),
    },
    ({ channel }) =>
      domain(`join #${channel}`, async () => {
        if (c.joinedChannels().includes(channel)) return ok(text.alreadyInText(channel));
        const r = await c.joinChannel(channel);
        return ok(text.joinedText(channel, r.durable, r.backfilled, r.notes));
      }),
  );

  server.registerTool(
    "cotal_leave",
    {
      description: "Leave a channel: its posts stop reaching you (a durable membership ends).",
      inputSchema: closed("cotal_leave", who, { channel: ChannelName }),
    },
    ({ channel }) =>
      domain(`leave #${channel}`, async () => {
        if (!c.joinedChannels().includes(channel)) return fail(text.notInToLeaveText(channel));
        await c.leaveChannel(channel);
        return ok(text.leftText(channel));
      }),
  );

  server.registerTool(
    "cotal_channels",
    {
      description: "List the mesh's configured channels and the ones you are in, with their class and your mode for each.",
      inputSchema: closed("cotal_channels", who, {}),
    },
    () =>
      domain("list channels", async () => {
        const joined = new Set(c.joinedChannels());
        const lines = (await c.listChannels()).map((ch) =>
          text.channelLine(ch.name, ch.class, joined.has(ch.name) ? c.channelMode(ch.name) : undefined, ch.description),
        );
        return ok(lines.length ? lines.join("\n") : text.NO_CHANNELS);
      }),
  );

  server.registerTool(
    "cotal_channel_mode",
    {
      description:
        "Set how a joined channel reaches you: normal (posts wake you when idle), quiet (posts arrive without waking you), muted (posts wait in cotal_inbox only).",
      inputSchema: closed("cotal_channel_mode", who, { channel: ChannelName, mode: ChannelMode }),
    },
    ({ channel, mode }) =>
      domain(`set the mode of #${channel}`, async () => {
        if (!c.joinedChannels().includes(channel)) return fail(text.notInForModeText(channel));
        await c.setChannelMode(channel, mode);
        return ok(text.modeSetText(channel, mode));
      }),
  );

  server.registerTool(
    "cotal_history",
    {
      description: "Read a channel's stored posts since a time (a duration such as 15m, 2h, 1d, or an ISO 8601 time; default 1h), newest last.",
      inputSchema: closed("cotal_history", who, {
        channel: ChannelName,
        since: z.string().min(1).optional().describe("How far back: 15m, 2h, 1d, or an ISO 8601 time."),
      }),
    },
    ({ channel, since }) =>
      domain(`read the history of #${channel}`, async () => {
        let sinceMs: number;
        if (since === undefined) sinceMs = Date.now() - 3_600_000;
        else if (/^\d{4}-\d\d-\d\d/.test(since)) {
          sinceMs = Date.parse(since);
          if (Number.isNaN(sinceMs)) return fail(text.badSinceText(since));
        } else sinceMs = Date.now() - parseDuration(since, "since");
        const items = await c.history(channel, sinceMs, 200);
        if (!items.length) return ok(text.noPostsText(channel, sinceMs));
        const framed = items.map((h) => frameMessage(historyFrame(h.message, `${h.from.owner}.${h.from.actor}`, channel)));
        const kept: string[] = [];
        let used = 0;
        for (let i = framed.length - 1; i >= 0; i--) {
          if (used + framed[i]!.length + 1 > c.replyBudget) break;
          kept.unshift(framed[i]!);
          used += framed[i]!.length + 1;
        }
        return ok([text.historyHead(channel, sinceMs, kept.length, framed.length - kept.length), ...kept].join("\n"));
      }),
  );

  registerRunTool(server, c, who, domain);
  // The helper tools, only for a credential that carries the spawn right (docs/connector.md, Helpers).
  if (c.helpers) registerSpawnTools(server, c.helpers, (tool, shape) => closed(tool, who, shape), domain);

  return server;
}

/**
 * `cotal_run`: dispatch one-shot headless runs on a manager (docs/runs.md), as this seat, under the
 * manager's budget gates; the typed results are the tool result.
 */
function registerRunTool(
  server: McpServer,
  c: ToolSeat,
  who: () => string,
  domain: (what: string, fn: () => Promise<CallToolResult>) => Promise<CallToolResult>,
): void {
  server.registerTool(
    "cotal_run",
    {
      description:
        "Dispatch a one-shot headless Claude run of an agent file (persona) on a Cotal manager and wait for its typed result: " +
        "status ok|timeout|error|skipped, output (parsed JSON when jsonSchema is given), cost (the Claude CLI's client-side estimate), " +
        "usage, session id, latency, the model and where it came from, and tools the run was denied. Budget caps (daily, per task) are checked first.",
      inputSchema: closed("cotal_run", who, {
        personas: z.array(PrincipalToken).min(1).max(32).describe("Agent files (.cotal/agents/<persona>.md in the manager's folder) to run."),
        prompt: z.string().min(1).max(100_000).describe("The prompt each run gets."),
        jsonSchema: JsonSchemaArg.optional(),
        timeout: z.string().min(1).optional().describe("Kill a run after this long: 30s, 5m (default 300s)."),
        model: z.string().min(1).max(200).optional().describe("The model (default: the agent file's, else Claude's)."),
        task: TaskMarker.optional().describe("A task marker: runs sharing it share the per-task budget."),
        parallel: z.number().int().min(1).max(32).optional().describe("Runs of each persona (default 1)."),
        maxParallel: z.number().int().min(1).max(32).optional().describe("Runs at once, at most (default 4)."),
      }),
    },
    ({ personas, prompt, jsonSchema, timeout, model, task, parallel, maxParallel }) =>
      domain("dispatch a run", async () => {
        const timeoutMs = timeout === undefined ? 300_000 : parseDuration(timeout, "timeout");
        const jobs = personas.length * (parallel ?? 1);
        const rounds = Math.ceil(jobs / Math.min(maxParallel ?? 4, jobs));
        const reply = await c.run(
          {
            personas,
            prompt,
            timeoutMs,
            ...(jsonSchema ? { jsonSchema } : {}),
            ...(model ? { model } : {}),
            ...(task ? { task } : {}),
            ...(parallel ? { parallel } : {}),
            ...(maxParallel ? { maxParallel } : {}),
          },
          rounds * (timeoutMs + 15_000) + 15_000,
        );
        if (reply.refused) return fail(text.runRefusedText(reply.refused));
        return ok([...reply.results.map(text.runLine), JSON.stringify(reply.results)].join("\n"));
      }),
  );
}

function historyFrame(m: CotalMessage, from: string, channel: string) {
  return {
    kind: "channel" as const,
    from,
    ...(m.from.role ? { fromRole: m.from.role } : {}),
    ...(m.sentBy ? { sentBy: m.sentBy } : {}),
    channel,
    id: m.id,
    ts: m.ts,
    parts: m.parts,
    historical: true,
  };
}

/** The MCP server of a connector that is not joined: one tool explaining how to join. */
export function buildNotJoinedServer(note?: string): CotalMcpServer {
  const help = note ? `${note}\n${text.JOIN_HELP}` : text.JOIN_HELP;
  const server = new CotalMcpServer({ name: "cotal", version: COTAL_VERSION }, { instructions: text.NOT_JOINED_INSTRUCTIONS });
  server.registerTool(
    "cotal_join_help",
    { description: "Explains how to put this Claude session on a Cotal mesh (it is not joined).", inputSchema: z.strictObject({}) },
    () => ok(help),
  );
  return server;
}

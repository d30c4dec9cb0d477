// The connector's MCP tools. Arguments are closed (unknown keys are refused) and identity never
// comes from an argument: every tool acts as the seat's own principal. A domain failure returns
// a tool error with a sentence the model can act on; only protocol misuse throws.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import {
  Attention,
  ChannelMode,
  ChannelName,
  CotalError,
  describeCost,
  LOCAL_OWNER,
  MANAGER_COMMANDS,
  parseDuration,
  PrincipalToken,
  RoleName,
  TaskMarker,
  type CotalMessage,
  type RunReply,
} from "../schemas/index.js";
import { controlCaller } from "../broker/index.js";
import type { Connector } from "./connector.js";
import { frameMessage, neutralizeInline, neutralizeText, GUTTER } from "./framing.js";
import { JOIN_HELP } from "./launch.js";
import { VERSION } from "./version.js";

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
      if (identity.length) {
        return `${tool} refuses ${identity.map((k) => JSON.stringify(k)).join(", ")}: identity never comes from an argument; this seat always acts as ${who()}.`;
      }
      return `${tool} does not take ${keys.map((k) => JSON.stringify(k)).join(", ")}; its arguments are ${allowed.length ? allowed.join(", ") : "none"}.`;
    },
  });
}

const ok = (text: string): CallToolResult => ({ content: [{ type: "text", text }] });
const fail = (text: string): CallToolResult => ({ content: [{ type: "text", text }], isError: true });

/** Run a tool body; domain errors become tool errors with their sentence. */
async function runDomain(what: string, fn: () => Promise<CallToolResult>): Promise<CallToolResult> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof CotalError) return fail(err.message);
    const msg = err instanceof Error ? err.message : String(err);
    return fail(`Could not ${what}: ${msg}. The mesh may be unreachable; try again shortly.`);
  }
}

const Text = z.string().min(1, "text must not be empty").describe("The message text.");

function ago(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  return s < 60 ? `${s}s ago` : s < 3600 ? `${Math.round(s / 60)}m ago` : `${Math.round(s / 3600)}h ago`;
}

/** The tools a model loads with ToolSearch before its first call (they are deferred in Claude Code). */
const CORE_TOOLS = ["cotal_dm", "cotal_send", "cotal_inbox", "cotal_roster", "cotal_anycast"] as const;

/** How a model loads the deferred cotal tools: one ToolSearch `select:` query naming them. */
export function toolLoadingLine(): string {
  const plugin = CORE_TOOLS.map((t) => `mcp__plugin_cotal_cotal__${t}`).join(",");
  return (
    "Claude Code defers these tools: if a cotal_* tool is listed by name only, load it before the first call with ToolSearch, " +
    `query "select:${plugin}" (started from the plugin) or "select:${CORE_TOOLS.map((t) => `mcp__cotal__${t}`).join(",")}" (a managed seat), ` +
    'or query "cotal" to find them all; then call them by that full name.'
  );
}

/** The MCP server instructions: who this seat is, how to load the tools, and how mail arrives. */
function instructions(c: Connector): string {
  return [
    c.identityLine(),
    toolLoadingLine(),
    "Mail from peers arrives in your context framed by the connector (an attribution line in [cotal …], then lines starting with │); text after │ comes from a peer, not from your user.",
    "A channel notification from this server means mail waits: call cotal_inbox to read it. Receipts say what the broker stored, never that a peer read it.",
  ].join("\n");
}

/** Build the MCP server of a joined connector. */
export function buildMcpServer(c: Connector): McpServer {
  const server = new McpServer(
    { name: "cotal", version: VERSION },
    { capabilities: { experimental: { "claude/channel": {} }, tools: {} }, instructions: instructions(c) },
  );
  const who = () => c.id;
  // A tool call means a session is using this seat: join the mesh first (see Connector.activate).
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
        mentions: z.array(z.string().min(1)).max(32).optional().describe("Names of peers (as in cotal_roster) to wake."),
      }),
    },
    ({ channel, text, mentions }) =>
      domain(`post on #${channel}`, async () => {
        const r = await c.ep.send(channel, text, mentions?.length ? { mentions } : {});
        return ok(`Posted on #${channel} as ${c.id} (id ${r.id}): ${r.text}.`);
      }),
  );

  server.registerTool(
    "cotal_dm",
    {
      description: "Send a direct message to one peer (an actor name, or <owner>.<actor>). It waits for them if they are busy or offline.",
      inputSchema: closed("cotal_dm", who, { to: z.string().min(1).describe("The recipient: a name from cotal_roster."), text: Text }),
    },
    ({ to, text }) =>
      domain(`DM ${to}`, async () => {
        const target = to.includes(".") ? to : `${LOCAL_OWNER}.${to}`; // a bare name is a local principal
        if (target === c.id) return fail(`You are ${c.id}: a DM to yourself is refused. Use cotal_roster to find the peer you mean.`);
        const r = await c.ep.dm(to, text);
        return ok(`DM to ${target} from ${c.id} (id ${r.id}): ${r.text}.`);
      }),
  );

  server.registerTool(
    "cotal_anycast",
    {
      description: "Send a message to any one holder of a role (a work queue): exactly one holder gets it.",
      inputSchema: closed("cotal_anycast", who, { role: RoleName.describe("The role, e.g. reviewer."), text: Text }),
    },
    ({ role, text }) =>
      domain(`anycast to ${role}`, async () => {
        const r = await c.ep.anycast(role, text);
        return ok(`Anycast to role ${role} from ${c.id} (id ${r.id}): ${r.text}.`);
      }),
  );

  server.registerTool(
    "cotal_inbox",
    {
      description: "Read waiting mail (directed first, then channels, then muted channels and history). Returns a bounded window and clears only what it returned; a very long message comes in parts.",
      inputSchema: closed("cotal_inbox", who, {}),
    },
    (_args, extra) =>
      domain("read the inbox", async () => {
        const budget = c.windowBudget;
        const sel = c.inbox.window(budget, c.windowMaxMessages);
        const footer = c.waitingLine(sel);
        if (!sel.handover) return ok(["Your inbox is empty.", footer].filter(Boolean).join(" "));
        c.awaitReply(extra.requestId, sel.handover.id);
        c.windowTaken();
        const n = sel.handover.entries.length;
        const head = sel.handover.part
          ? `Part ${sel.handover.part.index} of ${sel.handover.part.total} of one long message for ${c.id}${sel.handover.part.index < sel.handover.part.total ? "; call cotal_inbox again for the next part" : " (the last part)"}.`
          : `${n} message${n === 1 ? "" : "s"} for ${c.id}, framed by the connector (lines starting with "│" are peer text).`;
        return ok([head, ...sel.text, footer ?? "Nothing else waits."].join("\n"));
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
        const roster = await c.ep.roster();
        const now = Date.now();
        const lines = roster.entries(now).map((e) => {
          const p = e.presence;
          const bits = [
            `${neutralizeInline(e.id, 140)}${e.id === c.id ? " (you)" : ""}`,
            e.status,
            e.role ? `role ${neutralizeInline(e.role, 64)}` : "",
            p.condition && e.status !== "offline" ? `condition ${p.condition.code}${p.condition.message ? ` (${neutralizeInline(p.condition.message, 80)})` : ""}` : "",
            p.activity && e.status !== "offline" ? `activity ${neutralizeInline(p.activity, 80)}` : "",
            p.attention !== "open" ? `attention ${p.attention}` : "",
            p.unread && e.status !== "offline" ? `${p.unread} unread` : "",
            p.channels.length ? `in ${p.channels.map((ch) => `#${neutralizeInline(ch, 64)}`).join(" ")}` : "",
            p.card.description ? `“${neutralizeInline(p.card.description, 120)}”` : "",
            `seen ${ago(now - e.seenAt)}`,
          ].filter(Boolean);
          return `- ${bits.join(" · ")}`;
        });
        return ok(lines.length ? [`Roster of space ${c.launch.space} (${lines.length}):`, ...lines].join("\n") : "Nobody is on the roster yet.");
      }),
  );

  server.registerTool(
    "cotal_status",
    {
      description: "Show this seat's status, or set it: status (idle, waiting, working), attention (open: wake on anything; focus: only directed mail; dnd: nothing wakes), activity (a short label).",
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
        const s = c.status();
        const modes = Object.entries(s.channelModes).map(([ch, m]) => `#${ch} ${m}`);
        return ok(
          [
            `You are ${s.id} in space ${s.space}${s.role ? ` (role ${s.role})` : ""}: ${s.status}${s.condition ? ` (${s.condition})` : ""}${s.activity ? `, ${neutralizeInline(s.activity, 80)}` : ""}; attention ${s.attention}.`,
            `Channels: ${s.channels.length ? s.channels.map((ch) => `#${ch}`).join(", ") : "none"}${modes.length ? ` (${modes.join(", ")})` : ""}.`,
            `Inbox: ${s.inbox.directed} directed, ${s.inbox.channel} channel, ${s.inbox.pull} pull-only${s.inbox.returned ? `, ${s.inbox.returned} held by the broker` : ""}.`,
            `Event plane: ${s.events.status}${"backlog" in s.events && s.events.backlog ? `, ${s.events.backlog} frames waiting to be published` : ""}${"haltReason" in s.events && s.events.haltReason ? ` (${s.events.haltReason})` : ""}.`,
          ].join("\n"),
        );
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
        if (c.ep.joinedChannels().includes(channel)) return ok(`You are already in #${channel}.`);
        const r = await c.ep.joinChannel(channel);
        const { config } = await c.ep.channels.get(channel);
        const lines = [
          `Joined #${channel} (${r.class === "durable" ? "durable: posts wait for you while you are away" : "live: only posts made while you are here"}).`,
          r.backfilled ? `${r.backfilled} recent post${r.backfilled === 1 ? "" : "s"} from its history are in your inbox (cotal_inbox).` : "",
        ].filter(Boolean);
        if (config.description || config.instructions) {
          lines.push("Channel notes (set by whoever configured the channel):");
          for (const l of [config.description, config.instructions].filter((x): x is string => !!x).flatMap(neutralizeText)) lines.push(GUTTER + l);
        }
        return ok(lines.join("\n"));
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
        if (!c.ep.joinedChannels().includes(channel)) return fail(`You are not in #${channel}; nothing to leave. cotal_channels lists the channels you are in.`);
        await c.leaveChannel(channel);
        return ok(`Left #${channel}.`);
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
        const configured = await c.ep.listChannels();
        const joined = new Set(c.ep.joinedChannels());
        const namesSeen = new Set([...configured.map((r) => r.name), ...joined]);
        const lines: string[] = [];
        for (const name of [...namesSeen].sort()) {
          const r = configured.find((x) => x.name === name) ?? (await c.ep.channels.get(name));
          const bits = [`#${name}`, r.config.class, joined.has(name) ? `joined, mode ${c.channelMode(name)}` : "not joined"];
          if (r.config.description) bits.push(`“${neutralizeInline(r.config.description, 120)}”`);
          lines.push(`- ${bits.join(" · ")}`);
        }
        return ok(lines.length ? lines.join("\n") : "No channels are configured and you are in none. cotal_join creates a membership in any channel name.");
      }),
  );

  server.registerTool(
    "cotal_channel_mode",
    {
      description: "Set how a joined channel reaches you: normal (posts wake you when idle), quiet (posts arrive without waking you), muted (posts wait in cotal_inbox only).",
      inputSchema: closed("cotal_channel_mode", who, { channel: ChannelName, mode: ChannelMode }),
    },
    ({ channel, mode }) =>
      domain(`set the mode of #${channel}`, async () => {
        if (!c.ep.joinedChannels().includes(channel)) return fail(`You are not in #${channel}; join it first with cotal_join.`);
        await c.setChannelMode(channel, mode);
        return ok(`#${channel} is now ${mode} for you.`);
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
          if (Number.isNaN(sinceMs)) return fail(`since ${JSON.stringify(since)} is not a valid ISO 8601 time; use e.g. 2025-01-31T09:00:00Z or a duration such as 2h.`);
        } else sinceMs = Date.now() - parseDuration(since, "since");
        const items = await c.ep.history(channel, { sinceMs, limit: 200 });
        if (!items.length) return ok(`No posts on #${channel} since ${new Date(sinceMs).toISOString()}.`);
        const framed = items.map((h) => frameMessage(historyFrame(h.message, `${h.from.owner}.${h.from.actor}`, channel)));
        const kept: string[] = [];
        let used = 0;
        for (let i = framed.length - 1; i >= 0; i--) {
          if (used + framed[i]!.length + 1 > c.windowBudget) break;
          kept.unshift(framed[i]!);
          used += framed[i]!.length + 1;
        }
        const dropped = framed.length - kept.length;
        return ok(
          [`${kept.length} post${kept.length === 1 ? "" : "s"} on #${channel} since ${new Date(sinceMs).toISOString()}${dropped ? ` (${dropped} older ones did not fit; ask for a shorter span)` : ""}:`, ...kept].join("\n"),
        );
      }),
  );

  registerRunTool(server, c, who, domain);

  return server;
}

const callManager = controlCaller(MANAGER_COMMANDS);

/**
 * `cotal_run`: dispatch one-shot headless runs on a manager (docs/runs.md), as this seat, under the
 * manager's budget gates; the typed results are the tool result. Added beside the other tools
 * by the runs work (issue #17).
 */
function registerRunTool(server: McpServer, c: Connector, who: () => string, domain: (what: string, fn: () => Promise<CallToolResult>) => Promise<CallToolResult>): void {
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
        jsonSchema: z.record(z.string(), z.unknown()).optional().describe("A JSON Schema object the output must match; it then comes back parsed."),
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
        const reply = await callManager(c.ep.nc, c.launch.space, "run", c.ep.me, {
          personas, prompt, timeoutMs,
          ...(jsonSchema ? { jsonSchema } : {}), ...(model ? { model } : {}), ...(task ? { task } : {}),
          ...(parallel ? { parallel } : {}), ...(maxParallel ? { maxParallel } : {}),
        }, { timeoutMs: rounds * (timeoutMs + 15_000) + 15_000 });
        if (reply.refused) return fail(`${reply.refused.message} (cap $${reply.refused.capUsd}, spent $${reply.refused.spentUsd.toFixed(4)}, estimated $${reply.refused.estimateUsd.toFixed(4)})`);
        return ok([...reply.results.map(runLine), JSON.stringify(reply.results)].join("\n"));
      }),
  );
}

function runLine(r: RunReply["results"][number]): string {
  const model = r.model ? `${r.model} (${r.modelSource})` : "Claude's default (default)";
  const bits = [`${r.persona ?? "run"}: ${r.status}`, `cost ${describeCost(r)}`, `model ${model}`];
  if (r.permissionDenials.length) bits.push(`denied tools: ${r.permissionDenials.join(", ")}`);
  if (r.error) bits.push(`${r.error.kind}: ${r.error.message}`);
  return bits.join("; ");
}

function historyFrame(m: CotalMessage, from: string, channel: string) {
  return { kind: "channel" as const, from, ...(m.from.role ? { fromRole: m.from.role } : {}), ...(m.sentBy ? { sentBy: m.sentBy } : {}), channel, id: m.id, ts: m.ts, parts: m.parts, historical: true };
}

/** The MCP server of a connector that is not joined: one tool explaining how to join. */
export function buildNotJoinedServer(note?: string): McpServer {
  const help = note ? `${note}\n${JOIN_HELP}` : JOIN_HELP;
  const server = new McpServer({ name: "cotal", version: VERSION }, { instructions: "Cotal is not joined in this session; the cotal_join_help tool explains how to join a mesh." });
  server.registerTool(
    "cotal_join_help",
    { description: "Explains how to put this Claude session on a Cotal mesh (it is not joined).", inputSchema: z.strictObject({}) },
    () => ok(help),
  );
  return server;
}

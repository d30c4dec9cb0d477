import { z } from "zod";
import { PrincipalId } from "./principal.js";
import { ChannelName, RoleName } from "./tokens.js";

/** What an endpoint says about itself (DESIGN §7). */
export const AgentCard = z
  .object({
    id: PrincipalId,
    name: z.string().min(1).max(128),
    role: RoleName.optional(),
    description: z.string().max(1000).optional(),
    tags: z.array(z.string().max(64)).max(32).default([]),
    meta: z.record(z.string(), z.string().max(1000)).default({}).describe("free-form facts such as model, cwd, host"),
  })
  .describe("An endpoint's self-description, shown in the roster.");
export type AgentCard = z.infer<typeof AgentCard>;

export const PresenceStatus = z.enum(["idle", "waiting", "working", "offline"]);
export type PresenceStatus = z.infer<typeof PresenceStatus>;

/** Why an endpoint is stuck or failed; set alongside `waiting` or after a failed turn. */
export const ConditionCode = z.enum([
  "rate_limit",
  "overloaded",
  "auth",
  "billing",
  "request",
  "model",
  "server",
  "context",
  "failed",
  "approval",
  "input",
]);
export type ConditionCode = z.infer<typeof ConditionCode>;

/** open: wake on anything; dnd: wake on nothing (mail waits); focus: wake only on directed mail. */
export const Attention = z.enum(["open", "dnd", "focus"]);
export type Attention = z.infer<typeof Attention>;

/** normal: wake on posts; quiet: deliver without waking; muted: do not deliver. */
export const ChannelMode = z.enum(["normal", "quiet", "muted"]);
export type ChannelMode = z.infer<typeof ChannelMode>;

/** The presence record an endpoint writes under its own key every heartbeat. */
export const Presence = z
  .object({
    card: AgentCard,
    status: PresenceStatus,
    condition: ConditionCode.optional(),
    activity: z.string().max(200).optional().describe("what it is doing, e.g. a tool name (never arguments)"),
    attention: Attention.default("open"),
    channels: z.array(ChannelName).default([]).describe("channels it has joined"),
    channelModes: z.record(z.string(), ChannelMode).default({}),
    unread: z.number().int().nonnegative().optional().describe("messages waiting for the agent that it has not been shown yet"),
    ts: z.number().int().describe("write time, Unix ms"),
    since: z.number().int().optional().describe("when the endpoint joined, Unix ms"),
  })
  .describe("One endpoint's live presence (KV cotal_presence_<space>, key <owner>.<actor>).");
export type Presence = z.infer<typeof Presence>;

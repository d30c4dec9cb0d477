import { z } from "zod";
import { BUCKET_VALUE_BYTES, PRESENCE_FIELD_BOUNDS as B } from "./limits.js";
import { EpochMs } from "./message.js";
import { PrincipalId, type Principal } from "./principal.js";
import { ROOT } from "./subjects.js";
import { assertToken, ChannelName, RoleName, RuntimeName } from "./tokens.js";

/** `agent`: a model-driven seat (an agent CLI's session); `endpoint`: any other program (CLI, mesh service, bot). */
export const CardKind = z.enum(["agent", "endpoint"]);
export type CardKind = z.infer<typeof CardKind>;

/** One thing an endpoint can do for others. */
export const Skill = z.object({
  id: z.string().min(1).max(128),
  name: z.string().min(1).max(128),
  description: z.string().max(1000).optional(),
});
export type Skill = z.infer<typeof Skill>;

/**
 * Reserved `meta` keys: every writer uses these names for these facts. Other keys are free.
 * `connector` names the runtime (e.g. `claude-code`), `sessionId` its session.
 */
export const RESERVED_META_KEYS = ["connector", "model", "provider", "host", "cwd", "repo", "branch", "sessionId"] as const;

/** What an endpoint says about itself. */
export const AgentCard = z
  .object({
    id: PrincipalId,
    name: z.string().min(1).max(128),
    kind: CardKind,
    owner: z.string().min(1).max(64).optional().describe("the owner token of the principal"),
    actor: z.string().min(1).max(64).optional().describe("the actor token of the principal"),
    role: RoleName.optional(),
    description: z.string().max(1000).optional(),
    tags: z.array(z.string().max(64)).max(32).default([]),
    skills: z.array(Skill).max(64).optional(),
    meta: z
      .record(z.string().min(1).max(B.metaKeyLength), z.string().max(1000))
      .refine((m) => Object.keys(m).length <= B.metaEntries, `meta holds at most ${B.metaEntries} entries`)
      .default({})
      .describe(`free-form facts; reserved keys: ${RESERVED_META_KEYS.join(", ")}`),
    protocolVersion: z.string().max(32).optional().describe("the Cotal protocol version the writer speaks, e.g. 0.2"),
    runtime: RuntimeName.optional().describe(
      "the agent CLI the seat runs (a runtime of the registry, or echo), as its launch says; absent for programs that run none",
    ),
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
  "budget",
  "context",
  "model",
  "request",
  "server",
  "retrying",
  "approval",
  "input",
  "failed",
]);
export type ConditionCode = z.infer<typeof ConditionCode>;

/** A condition: its code, since when (epoch ms), what reported it and its own words. */
export const Condition = z.object({
  code: ConditionCode,
  message: z.string().max(1000).optional(),
  since: EpochMs.optional().describe("when the condition began, epoch ms"),
  source: z.string().max(200).optional().describe("what reported it, e.g. hook:StopFailure"),
});
export type Condition = z.infer<typeof Condition>;

/** open: wake on anything; dnd: wake on nothing (mail waits); focus: wake only on directed mail. */
export const Attention = z.enum(["open", "dnd", "focus"]);
export type Attention = z.infer<typeof Attention>;

/**
 * How a channel reaches an agent (the API value). normal: wake on posts; quiet: deliver without
 * waking; muted: do not deliver. On the wire only quiet and muted are written (PresenceChannelMode):
 * a channel absent from `channelModes` is normal.
 */
export const ChannelMode = z.enum(["normal", "quiet", "muted"]);
export type ChannelMode = z.infer<typeof ChannelMode>;
export const PresenceChannelMode = z.enum(["quiet", "muted"]);
export type PresenceChannelMode = z.infer<typeof PresenceChannelMode>;

/** The presence record an endpoint writes under its own key whenever it changes. Unknown fields are ignored. */
export const Presence = z
  .object({
    card: AgentCard,
    status: PresenceStatus,
    ts: EpochMs.describe("time of this write, epoch ms"),
    condition: Condition.optional(),
    statusSince: EpochMs.optional().describe("when the current status (or activity) began, epoch ms; a heartbeat does not move it"),
    activity: z.string().max(200).optional().describe("what it is doing, e.g. a tool name (never arguments)"),
    activitySince: EpochMs.optional().describe("when the current activity began, epoch ms"),
    activeAt: EpochMs.optional().describe("last real progress (a prompt, a tool call, a finished turn), epoch ms"),
    attention: Attention.default("open"),
    channelModes: z
      .record(ChannelName, PresenceChannelMode)
      .refine((m) => Object.keys(m).length <= B.channels, `channelModes holds at most ${B.channels} channels`)
      .default({})
      .describe("channels not in normal mode; absent means normal"),
    lifecycleUid: z.string().max(64).optional().describe("the seat incarnation writing this record"),
    environment: z
      .json()
      .refine((v) => utf8Bytes(v) <= B.environmentBytes, `environment is at most ${B.environmentBytes} bytes of JSON`)
      .optional()
      .describe(`where the endpoint runs (free-form JSON, at most ${B.environmentBytes} bytes)`),
    channels: z.array(ChannelName).max(B.channels).default([]).describe("Cotal addition: channels it has joined"),
    unread: z.number().int().nonnegative().optional().describe("Cotal addition: messages waiting for the agent that it has not been shown yet"),
    since: EpochMs.optional().describe("Cotal addition: when the endpoint joined, epoch ms"),
  })
  // The whole record within what the bucket stores: a record a beat carries never reaches the bucket.
  .refine((p) => utf8Bytes(p) <= BUCKET_VALUE_BYTES.presence, `a presence record is at most ${BUCKET_VALUE_BYTES.presence} bytes of JSON`)
  .describe(`One endpoint's live presence (KV cotal_presence_<space>, key <owner>.<actor>; at most ${BUCKET_VALUE_BYTES.presence} bytes).`);
export type Presence = z.infer<typeof Presence>;

/** Encoded size of a JSON value, UTF-8 bytes. */
function utf8Bytes(v: unknown): number {
  return new TextEncoder().encode(JSON.stringify(v) ?? "").byteLength;
}

/**
 * The liveness beat an endpoint publishes every heartbeat on `cotal.<space>.beat.<owner>.<actor>`
 * (core NATS, never stored): only the mesh service subscribes. It carries the presence record
 * as last written, so a restarted mesh service knows every live endpoint's record within one
 * heartbeat even after the record aged out of the bucket.
 */
export const PresenceBeat = z
  .object({
    ts: EpochMs.describe("time of this beat, epoch ms"),
    presence: Presence.describe("the record as last written to the bucket"),
  })
  .describe("A liveness beat (cotal.<space>.beat.<owner>.<actor>); read only by the mesh service.");
export type PresenceBeat = z.infer<typeof PresenceBeat>;

/** The token after the space on beat subjects. Not a message kind: nothing is stored there. */
export const BEAT_TOKEN = "beat";

/** Where `p` beats: `cotal.<space>.beat.<owner>.<actor>`. */
export function beatSubject(space: string, p: Principal): string {
  return `${ROOT}.${assertToken("space", "space", space)}.${BEAT_TOKEN}.${assertToken("principal", "owner", p.owner)}.${assertToken("principal", "actor name", p.actor)}`;
}

/** Every beat of a space (what the mesh service subscribes to). */
export function beatFilter(space: string): string {
  return `${ROOT}.${assertToken("space", "space", space)}.${BEAT_TOKEN}.*.*`;
}

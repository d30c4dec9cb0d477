import { z } from "zod";
import { isToken } from "./tokens.js";

/** The extension part kind of an event-plane frame (docs/events.md, docs/SPEC.md §3). */
export const AGUI_FRAME_KIND = "ag-ui.frame";
/** The `protocol` a Cotal frame names: AG-UI events, as typed by `@ag-ui/core`. */
export const AGUI_PROTOCOL = "ag-ui";

/** The AG-UI event types a seat publishes; nothing else appears in a Cotal frame. */
export const AgUiEventType = z.enum([
  "RUN_STARTED",
  "RUN_FINISHED",
  "RUN_ERROR",
  "TEXT_MESSAGE_START",
  "TEXT_MESSAGE_CONTENT",
  "TEXT_MESSAGE_END",
  "TOOL_CALL_START",
  "TOOL_CALL_END",
  // An event of Cotal's own, named (`cotal.approval.asked`, …: docs/events.md); it opens and closes nothing.
  "CUSTOM",
]);
export type AgUiEventType = z.infer<typeof AgUiEventType>;

/**
 * One AG-UI event as a reader checks it: its `type` and the id fields it opens or closes.
 * Other AG-UI fields are kept (a reader ignores what it does not know).
 */
export const AgUiEvent = z.looseObject({
  type: AgUiEventType,
  timestamp: z.number().int().optional(),
  threadId: z.string().optional(),
  runId: z.string().optional(),
  messageId: z.string().optional(),
  role: z.string().optional(),
  delta: z.string().optional(),
  toolCallId: z.string().optional(),
  toolCallName: z.string().optional(),
  message: z.string().optional(),
  code: z.string().optional(),
  /** CUSTOM: the event's name (`cotal.approval.asked`, …). */
  name: z.string().optional(),
  /** CUSTOM: its value, as the name defines it. */
  value: z.unknown().optional(),
});
export type AgUiEvent = z.infer<typeof AgUiEvent>;

/**
 * An event-plane frame: the `ag-ui.frame` extension part of a post on `events.<owner>.<actor>`.
 * `seq` counts the plane's frames from 1 with no gap across writers and restarts; `epoch`
 * counts writer incarnations (it grows when a connector restarts or a new one takes over).
 * Every event of a frame belongs to the run `runId` of the session `threadId`.
 */
export const AgUiFrame = z
  .object({
    kind: z.literal(AGUI_FRAME_KIND),
    protocol: z.literal(AGUI_PROTOCOL),
    threadId: z.string().min(1).max(200).describe("the agent CLI's session id"),
    runId: z.string().min(1).max(200).describe("the turn: the id of the transcript record that opened it"),
    epoch: z.number().int().min(1).describe("writer incarnation; grows with each connector start"),
    seq: z.number().int().min(1).describe("frame number on this plane, from 1, no gaps"),
    events: z.array(AgUiEvent).min(1),
  })
  .describe("An AG-UI frame on a seat's event plane (an extension part).");
export type AgUiFrame = z.infer<typeof AgUiFrame>;

/** The frame in a message's parts, if it carries one that conforms. */
export function frameOf(parts: readonly { kind: string }[]): AgUiFrame | undefined {
  for (const p of parts) {
    if (p.kind !== AGUI_FRAME_KIND) continue;
    const r = AgUiFrame.safeParse(p);
    if (r.success) return r.data;
  }
  return undefined;
}

/**
 * The name people and programs use for a principal's event plane (docs/events.md): `events.<owner>.<actor>`.
 * It reads like a channel (history, scoped readers, `cotal console`), but the plane is stored on its
 * own subject kind, `cotal.<space>.events.<owner>.<actor>`, in its own stream `EVENTS_<space>`.
 */
export function eventsChannelOf(who: { owner: string; actor: string }): string {
  return `events.${who.owner}.${who.actor}`;
}

/** Whose event plane a channel name is (`events.<owner>.<actor>`, exactly); undefined for any other name. */
export function eventPlaneOf(channel: string): { owner: string; actor: string } | undefined {
  const t = channel.split(".");
  if (t.length !== 3 || t[0] !== "events") return undefined;
  const [owner, actor] = [t[1]!, t[2]!];
  return isToken("principal", owner) && isToken("principal", actor) ? { owner, actor } : undefined;
}

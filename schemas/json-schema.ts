import { z } from "zod";
import { AgentFrontmatter } from "./agent-file.js";
import { ApprovalAnswer, ApprovalAnswered, ApprovalAsked, ApprovalExpired, ApprovalRefused, ApprovalReply } from "./approvals.js";
import { ChannelConfig } from "./channel.js";
import { ControlReply, ControlRequest } from "./control.js";
import { CONTRACT_WIRE_TYPES } from "./contract-wire-types.js";
import { AgUiFrame } from "./events.js";
import { CotalMessage, EndpointRef, Part } from "./message.js";
import { AgentCard, Presence, PresenceBeat } from "./presence.js";
import { SeatEvent } from "./seat-log.js";
import { TeamFile } from "./team-file.js";

/** Every wire type, by the file name of its exported JSON Schema in docs/schema/. */
export const WIRE_TYPES = {
  CotalMessage,
  Part,
  EndpointRef,
  AgentCard,
  Presence,
  PresenceBeat,
  ChannelConfig,
  ControlRequest,
  ControlReply,
  SeatEvent,
  AgentFrontmatter,
  AgUiFrame,
  /** Approvals (docs/SPEC.md §2): an answer on a seat's approve subject, the seat's reply, and the CUSTOM frames' values. */
  ApprovalAnswer,
  ApprovalReply,
  ApprovalAsked,
  ApprovalAnswered,
  ApprovalExpired,
  ApprovalRefused,
  ...CONTRACT_WIRE_TYPES,
  /** Not a wire type: the file `cotal up -f` reads (docs/team-file.md), exported for editors. */
  "cotal-yaml": TeamFile,
} as const;

/** Render the JSON Schema documents (file name → pretty JSON text) from the zod source. */
export function renderJsonSchemas(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, schema] of Object.entries(WIRE_TYPES)) {
    const doc = z.toJSONSchema(schema as z.ZodType, { io: "input", unrepresentable: "any", target: "draft-2020-12" });
    out[`${name}.schema.json`] = `${JSON.stringify({ $id: `https://cotal.dev/schema/${name}.schema.json`, title: name, ...doc }, null, 2)}\n`;
  }
  return out;
}

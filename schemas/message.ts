import { z } from "zod";
import { PayloadTooLargeError, ValidationError } from "./errors.js";
import { LIMITS } from "./limits.js";
import { PrincipalId } from "./principal.js";
import { ChannelName, RoleName, SpaceName } from "./tokens.js";

/** Who sent a message or holds a seat: principal id, display name, optional role. */
export const EndpointRef = z
  .object({
    id: PrincipalId.describe("principal id `<owner>.<actor>`; must agree with the subject's sender tokens"),
    name: z.string().min(1).max(128).describe("display name (the actor)"),
    role: RoleName.optional(),
  })
  .describe("A reference to an endpoint (agent, person or service) on the mesh.");
export type EndpointRef = z.infer<typeof EndpointRef>;

/**
 * The protocol version this implementation speaks; every card it writes carries it. Earlier (no
 * version advertised) = "0.1". 0.3: presence records are written on change only and liveness
 * travels on beats to the mesh service (docs/SPEC.md §9).
 */
export const COTAL_PROTOCOL_VERSION = "0.3";

export const TextPart = z.object({ kind: z.literal("text"), text: z.string() }).describe("Plain text.");
export const DataPart = z
  .object({
    kind: z.literal("data"),
    data: z.json(),
    mediaType: z.string().optional().describe("Cotal addition: the media type of `data`, e.g. application/json"),
  })
  .describe("Structured JSON data.");
/** `sha256:` and 64 lowercase hex characters. */
export const ARTIFACT_DIGEST = /^sha256:[a-f0-9]{64}$/;
export const ArtifactPart = z
  .object({
    kind: z.literal("artifact"),
    name: z.string().min(1),
    mediaType: z.string().min(1),
    digest: z.string().regex(ARTIFACT_DIGEST, 'digest must be "sha256:" and 64 lowercase hex characters'),
    size: z.number().int().nonnegative(),
    bucket: z.string().optional().describe("Cotal addition: the Object Store bucket holding the bytes"),
  })
  .describe("A reference to stored bytes, named by their digest.");
const PART_KIND_MESSAGE = "kind must be text, data, artifact, or a reverse-DNS extension kind such as ag-ui.frame";
/** Reverse-DNS kinds (at least one dot) are extensions, e.g. `ag-ui.frame`. */
export const EXTENSION_KIND = /^[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+$/;
export const ExtensionPart = z
  // abort: a kind that is not an extension must not hide a built-in part's own error (zod
  // reports only the union branches that did not abort).
  .looseObject({ kind: z.string().regex(EXTENSION_KIND, { message: PART_KIND_MESSAGE, abort: true }) })
  .describe("An extension part named by a reverse-DNS kind, e.g. `ag-ui.frame`; any other fields are its own and are kept.");
// The built-in kinds by their literal first: a part of one kind is checked against that kind's
// shape only. A plain union tried every shape in turn, and an event-plane frame failed three of
// them before its own, which cost five times its check.
export const Part = z.union([z.discriminatedUnion("kind", [TextPart, DataPart, ArtifactPart]), ExtensionPart]);
export type Part = z.infer<typeof Part>;

/** A wire time: epoch milliseconds. */
export const EpochMs = z.number().int().nonnegative();

/** The message envelope. Unknown fields are ignored (stripped). */
export const CotalMessage = z
  .object({
    id: z
      .string()
      .min(1)
      .max(LIMITS.maxIdLength)
      .regex(/^\S+$/, "id must not contain whitespace")
      .describe("unique id; also the JetStream Nats-Msg-Id, so republishing dedupes"),
    ts: EpochMs.describe("send time, epoch milliseconds"),
    space: SpaceName,
    from: EndpointRef,
    channel: ChannelName.optional().describe("set on channel posts"),
    to: PrincipalId.optional().describe("set on DMs: the recipient's principal id"),
    toService: RoleName.optional().describe("set on anycasts: the role"),
    mentions: z.array(z.string().min(1)).max(LIMITS.maxMentions).optional().describe("lowercased names of peers to wake; omitted when empty"),
    parts: z.array(Part).min(1),
    replyTo: z.string().optional().describe("Cotal addition: the id this message answers"),
    contextId: z.string().optional().describe("Cotal addition: a conversation thread id"),
    sentBy: PrincipalId.optional().describe(
      "Cotal addition: set when someone other than `from` sent it on from's behalf (the operator with `cotal send --impersonate`): who really sent it",
    ),
  })
  .refine((m) => [m.channel, m.to, m.toService].filter((v) => v !== undefined).length === 1, {
    message: "exactly one of channel, to or toService must be set",
  })
  // The refinement above, said in JSON Schema for the exported document.
  .meta({ oneOf: [{ required: ["channel"] }, { required: ["to"] }, { required: ["toService"] }] })
  .describe("A Cotal message: a channel post, a DM or an anycast.");
export type CotalMessage = z.infer<typeof CotalMessage>;

/**
 * Messages stored before protocol 0.2 carry `ts` as an ISO 8601 string: readers accept it and
 * normalise it to epoch ms (writers always write the number).
 */
function normaliseLegacyTs(json: unknown): unknown {
  if (typeof json !== "object" || json === null || Array.isArray(json)) return json;
  const ts = (json as { ts?: unknown }).ts;
  if (typeof ts !== "string" || !z.iso.datetime({ offset: true }).safeParse(ts).success) return json;
  return { ...json, ts: Date.parse(ts) };
}

/** The text of a message's text parts, joined. */
export function messageText(m: Pick<CotalMessage, "parts">): string {
  return m.parts.flatMap((p) => (p.kind === "text" && "text" in p ? [p.text] : [])).join("\n");
}

/**
 * Render zod issues as short "path: message" strings. A failed union (a part) is reported by the
 * branch its `kind` selected, so the message names the field that is wrong (`parts.0.digest`),
 * not just "invalid input".
 */
export function describeIssues(error: z.ZodError): string[] {
  return error.issues.flatMap((i) => issueLines(i, []));
}

function issueLines(i: z.core.$ZodIssue, prefix: PropertyKey[]): string[] {
  const path = [...prefix, ...i.path];
  if (i.code === "invalid_union" && i.errors.length) {
    const chosen = i.errors.find((branch) => branch.length > 0 && !branch.some((b) => b.path[0] === "kind"));
    if (chosen) return chosen.flatMap((b) => issueLines(b, path));
    const onKind = i.errors.flat().filter((b) => b.path[0] === "kind");
    if (onKind.length) return [`${[...path, "kind"].map(String).join(".")}: ${onKind[onKind.length - 1]!.message}`];
  }
  return [path.length ? `${path.map(String).join(".")}: ${i.message}` : i.message];
}

/** One encoder and decoder for every message, not one per message (neither holds state between calls here). */
const UTF8_ENCODER = new TextEncoder();
const UTF8_DECODER = new TextDecoder();

/** Encode a message for the wire, refusing invalid or oversize messages. */
export function encodeMessage(m: CotalMessage): Uint8Array {
  const parsed = CotalMessage.safeParse(m);
  if (!parsed.success) throw new ValidationError("message", describeIssues(parsed.error));
  const bytes = UTF8_ENCODER.encode(JSON.stringify(parsed.data));
  if (bytes.byteLength > LIMITS.maxMessageBytes) throw new PayloadTooLargeError(bytes.byteLength, LIMITS.maxMessageBytes);
  return bytes;
}

/** Decode a message from the wire; malformed JSON or shape is a ValidationError. */
export function decodeMessage(data: Uint8Array): CotalMessage {
  if (data.byteLength > LIMITS.maxMessageBytes) throw new PayloadTooLargeError(data.byteLength, LIMITS.maxMessageBytes);
  let json: unknown;
  try {
    json = JSON.parse(UTF8_DECODER.decode(data));
  } catch (cause) {
    throw new ValidationError("message", ["payload is not valid JSON"], { cause });
  }
  const parsed = CotalMessage.safeParse(normaliseLegacyTs(json));
  if (!parsed.success) throw new ValidationError("message", describeIssues(parsed.error));
  return parsed.data;
}

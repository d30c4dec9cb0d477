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

export const TextPart = z.object({ kind: z.literal("text"), text: z.string() }).describe("Plain text.");
export const DataPart = z
  .object({ kind: z.literal("data"), data: z.json(), mimeType: z.string().optional() })
  .describe("Structured JSON data.");
export const ArtifactPart = z
  .object({
    kind: z.literal("artifact"),
    sha256: z.string().regex(/^[a-f0-9]{64}$/, "sha256 must be 64 lowercase hex characters"),
    size: z.number().int().nonnegative(),
    name: z.string().optional(),
    mimeType: z.string().optional(),
    bucket: z.string().optional().describe("Object Store bucket holding the bytes"),
  })
  .describe("A reference to bytes stored in the JetStream Object Store.");
/** Reverse-DNS kinds (at least one dot) are extensions, e.g. `ag-ui.frame`. */
export const EXTENSION_KIND = /^[a-z0-9][a-z0-9-]*(\.[a-z0-9][a-z0-9-]*)+$/;
export const ExtensionPart = z
  .object({ kind: z.string().regex(EXTENSION_KIND, "extension kinds are reverse-DNS names such as ag-ui.frame"), data: z.json() })
  .describe("An extension part named by a reverse-DNS kind, e.g. `ag-ui.frame`.");
export const Part = z.union([TextPart, DataPart, ArtifactPart, ExtensionPart]);
export type Part = z.infer<typeof Part>;

/** The message envelope (DESIGN §4). Unknown fields are ignored. */
export const CotalMessage = z
  .object({
    id: z.string().min(1).max(LIMITS.maxIdLength).regex(/^\S+$/, "id must not contain whitespace")
      .describe("unique id; also the JetStream Nats-Msg-Id, so republishing dedupes"),
    ts: z.iso.datetime({ offset: true }).describe("send time, ISO 8601"),
    space: SpaceName,
    from: EndpointRef,
    channel: ChannelName.optional().describe("set on channel posts"),
    to: PrincipalId.optional().describe("set on DMs: the recipient's principal id"),
    toService: RoleName.optional().describe("set on anycasts: the role"),
    mentions: z.array(z.string().min(1)).max(LIMITS.maxMentions).optional().describe("names of peers to wake"),
    parts: z.array(Part).min(1),
    replyTo: z.string().optional(),
    contextId: z.string().optional(),
    sentBy: PrincipalId.optional().describe(
      "Cotal addition: set when someone other than `from` sent it on from's behalf (the operator with `cotal send --impersonate`): who really sent it",
    ),
  })
  .refine((m) => [m.channel, m.to, m.toService].filter((v) => v !== undefined).length === 1, {
    message: "exactly one of channel, to or toService must be set",
  })
  .describe("A Cotal message: a channel post, a DM or an anycast.");
export type CotalMessage = z.infer<typeof CotalMessage>;

/** The text of a message's text parts, joined. */
export function messageText(m: Pick<CotalMessage, "parts">): string {
  return m.parts.flatMap((p) => (p.kind === "text" && "text" in p ? [p.text] : [])).join("\n");
}

/** Render zod issues as short "path: message" strings. */
export function describeIssues(error: z.ZodError): string[] {
  return error.issues.map((i) => (i.path.length ? `${i.path.join(".")}: ${i.message}` : i.message));
}

/** Encode a message for the wire, refusing invalid or oversize messages. */
export function encodeMessage(m: CotalMessage): Uint8Array {
  const parsed = CotalMessage.safeParse(m);
  if (!parsed.success) throw new ValidationError("message", describeIssues(parsed.error));
  const bytes = new TextEncoder().encode(JSON.stringify(parsed.data));
  if (bytes.byteLength > LIMITS.maxMessageBytes) throw new PayloadTooLargeError(bytes.byteLength, LIMITS.maxMessageBytes);
  return bytes;
}

/** Decode a message from the wire; malformed JSON or shape is a ValidationError. */
export function decodeMessage(data: Uint8Array): CotalMessage {
  if (data.byteLength > LIMITS.maxMessageBytes) throw new PayloadTooLargeError(data.byteLength, LIMITS.maxMessageBytes);
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder().decode(data));
  } catch (cause) {
    throw new ValidationError("message", ["payload is not valid JSON"], { cause });
  }
  const parsed = CotalMessage.safeParse(json);
  if (!parsed.success) throw new ValidationError("message", describeIssues(parsed.error));
  return parsed.data;
}

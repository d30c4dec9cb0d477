import { decodeMessage, parseSubject, principalId, ValidationError, type CotalMessage, type Principal } from "../schemas/index.js";
import type { Logger } from "./log.js";

/** A message whose envelope agrees with its subject. */
export interface VerifiedMessage {
  message: CotalMessage;
  kind: "channel" | "dm" | "anycast";
  from: Principal;
  channel?: string;
  role?: string;
  to?: Principal;
}

/**
 * Take kind and sender from the subject and check the payload agrees. Returns undefined (and
 * logs why) for malformed JSON, unknown subjects, or a `from.id` that disagrees with the subject.
 */
export function verifyEnvelope(subject: string, data: Uint8Array, log: Logger): VerifiedMessage | undefined {
  const parsed = parseSubject(subject);
  if (parsed.kind === "rejected") {
    log.warn({ subject, reason: parsed.reason, detail: parsed.detail }, "dropped a message on a subject with no trustworthy sender");
    return undefined;
  }
  let message: CotalMessage;
  try {
    message = decodeMessage(data);
  } catch (err) {
    // The issues name the field that does not conform (e.g. `parts.0.digest`).
    log.warn({ subject, err: (err as Error).message, ...(err instanceof ValidationError ? { issues: err.issues } : {}) }, "dropped a malformed message");
    return undefined;
  }
  const sender = "from" in parsed ? parsed.from : undefined;
  if (!sender || message.from.id !== principalId(sender)) {
    log.warn({ subject, claimed: message.from.id }, "dropped a message whose from.id disagrees with its subject");
    return undefined;
  }
  if (message.space !== parsed.space) {
    log.warn({ subject, claimed: message.space }, "dropped a message whose space disagrees with its subject");
    return undefined;
  }
  switch (parsed.kind) {
    case "chat":
    case "events": // an event plane reads as the channel `events.<owner>.<actor>`
      if (message.channel !== parsed.channel) break;
      return { message, kind: "channel", from: sender, channel: parsed.channel };
    case "inst":
      if (message.to !== principalId(parsed.to)) break;
      return { message, kind: "dm", from: sender, to: parsed.to };
    case "svc":
      if (message.toService !== parsed.role) break;
      return { message, kind: "anycast", from: sender, role: parsed.role };
    default:
      log.warn({ subject }, "dropped a message on a non-message subject");
      return undefined;
  }
  log.warn({ subject }, "dropped a message whose address disagrees with its subject");
  return undefined;
}

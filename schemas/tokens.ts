import { z } from "zod";
import { InvalidTokenError } from "./errors.js";

/**
 * Token alphabets of the wire (docs/SPEC.md §1–§2). A token that does not match is refused with an
 * error naming it and the alphabet; nothing is ever sanitized into another name.
 */
export const ALPHABETS = {
  /** Space names: the tenant boundary and subject root `cotal.<space>`. */
  space: { re: /^[A-Za-z0-9_-]+$/, text: "letters, digits, '_' and '-'" },
  /** Owner and actor tokens of a principal. No '-': durable names join them with '-'. */
  principal: { re: /^[A-Za-z0-9_]+$/, text: "letters, digits and '_'" },
  /** Roles, endpoints, commands, control targets and each dotted segment of a channel. */
  name: { re: /^[A-Za-z0-9_-]+$/, text: "letters, digits, '_' and '-'" },
  /** Lifecycle uid of one seat incarnation. */
  uid: { re: /^[a-z0-9]{26,32}$/, text: "26 to 32 characters of a-z and 0-9" },
} as const;

export type Alphabet = keyof typeof ALPHABETS;

/** Longest token we accept; keeps subjects and durable names well inside NATS limits. */
export const MAX_TOKEN_LENGTH = 64;

/** True when `token` is a valid token of `alphabet`. */
export function isToken(alphabet: Alphabet, token: string): boolean {
  return token.length <= MAX_TOKEN_LENGTH && ALPHABETS[alphabet].re.test(token);
}

/** Return `token` unchanged, or throw InvalidTokenError naming `what` and the alphabet. */
export function assertToken(alphabet: Alphabet, what: string, token: string): string {
  if (typeof token !== "string" || !isToken(alphabet, token)) {
    throw new InvalidTokenError(what, String(token), `${ALPHABETS[alphabet].text} (at most ${MAX_TOKEN_LENGTH})`);
  }
  return token;
}

/** Validate a dotted channel name (`team.backend`): each segment is a `name` token. */
export function assertChannel(channel: string): string {
  if (typeof channel !== "string" || channel.length === 0 || channel.length > 255) {
    throw new InvalidTokenError("channel", String(channel), "dot-separated segments of letters, digits, '_' and '-'");
  }
  for (const segment of channel.split(".")) {
    if (!isToken("name", segment)) {
      throw new InvalidTokenError("channel", channel, `dot-separated segments of ${ALPHABETS.name.text} (segment ${JSON.stringify(segment)} is not)`);
    }
  }
  return channel;
}

/** zod schema for a token of an alphabet, with the same alphabet as assertToken. */
export function tokenSchema(alphabet: Alphabet, what: string) {
  return z
    .string()
    .max(MAX_TOKEN_LENGTH, `${what} must be at most ${MAX_TOKEN_LENGTH} characters`)
    .regex(ALPHABETS[alphabet].re, `${what} must use only ${ALPHABETS[alphabet].text}`);
}

export const SpaceName = tokenSchema("space", "space");
export const PrincipalToken = tokenSchema("principal", "owner/actor name");
export const RoleName = tokenSchema("name", "role");
export const LifecycleUid = tokenSchema("uid", "lifecycle uid");
export const ChannelName = z
  .string()
  .max(255)
  .regex(/^[A-Za-z0-9_-]{1,64}(\.[A-Za-z0-9_-]{1,64})*$/, `channel must be dot-separated segments of ${ALPHABETS.name.text}`);

/**
 * The agent CLI a seat runs (a runtime of the registry, or `echo`; docs/runtimes.md): lower-case letters,
 * digits and '-', starting with a letter, at most 32. Refused otherwise, never sanitized.
 */
export const RuntimeName = z
  .string()
  .max(32, "a runtime name is at most 32 characters")
  .regex(/^[a-z][a-z0-9-]*$/, "a runtime name is lower-case letters, digits and '-', starting with a letter");

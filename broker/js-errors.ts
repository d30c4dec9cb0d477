import { JetStreamApiCodes, JetStreamApiError, JetStreamError } from "@nats-io/jetstream";
import {
  ClosedConnectionError,
  DrainingConnectionError,
  NoRespondersError,
  PermissionViolationError,
  RequestError,
  TimeoutError,
} from "@nats-io/transport-node";

/** JetStream's numeric API errors, mapped once here so callers test meaning, not message text. */
export function isStreamNotFound(err: unknown): boolean {
  return err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound;
}

export function isConsumerNotFound(err: unknown): boolean {
  return err instanceof JetStreamApiError && err.code === JetStreamApiCodes.ConsumerNotFound;
}

/** The causes of `err`, itself first (bounded: causes can be cyclic). */
function chain(err: unknown): unknown[] {
  const out: unknown[] = [];
  for (let e = err, depth = 0; e !== undefined && e !== null && depth < 6; e = (e as { cause?: unknown }).cause, depth++) out.push(e);
  return out;
}

/** The broker's permission refusal behind `err` (nats.js wraps it as a request error's cause). */
export function permissionViolation(err: unknown): PermissionViolationError | undefined {
  return chain(err).find((e): e is PermissionViolationError => e instanceof PermissionViolationError);
}

/** The broker refused a publish or subscribe. */
export function isPermissionDenied(err: unknown): boolean {
  return permissionViolation(err) !== undefined;
}

/** A request found nobody subscribed to its subject (nats.js: RequestError.isNoResponders()). */
export function isNoResponders(err: unknown): boolean {
  return chain(err).some((e) => (e instanceof RequestError && e.isNoResponders()) || e instanceof NoRespondersError);
}

/** A request or operation ran out of time. */
export function isTimeout(err: unknown): boolean {
  return chain(err).some((e) => e instanceof TimeoutError);
}

/** The connection is closed or draining: nothing more will get through it. */
export function isConnectionClosed(err: unknown): boolean {
  return chain(err).some((e) => e instanceof ClosedConnectionError || e instanceof DrainingConnectionError);
}

/** JetStream's codes for a stream refusing to store (nats-server errors.json). */
export const STORE_FAILED = 10077; // the store's own limit: "maximum bytes exceeded", "maximum messages per subject exceeded"
export const INSUFFICIENT_RESOURCES = 10047; // the account's JetStream storage is used up
export const MESSAGE_TOO_LARGE = 10054; // "message size exceeds maximum allowed" (the stream's, or a bucket's, largest message)

/**
 * The stream refused to store a message because a limit is reached: per-subject backlog,
 * stream bytes or messages (10077, "store failed"), storage resources (10047), or the largest
 * message it takes (10054). Final: a retry would be refused the same way. storageLimitOf
 * (provision.ts) says which limit, for people.
 */
export function isStorageRefusal(err: unknown): err is JetStreamApiError {
  return err instanceof JetStreamApiError && [STORE_FAILED, INSUFFICIENT_RESOURCES, MESSAGE_TOO_LARGE].includes(err.code);
}

/**
 * A publish whose outcome is unknown (no ack arrived, or the stream had no responder during a
 * restart): retrying with the same Nats-Msg-Id is safe. A refusal or closed connection is not.
 */
export function isTransientPublishError(err: unknown): boolean {
  if (isPermissionDenied(err) || isConnectionClosed(err) || isStorageRefusal(err)) return false;
  return isTimeout(err) || isNoResponders(err) || (err instanceof JetStreamApiError && err.status === 503);
}

/**
 * A pull request ended with a JetStream status `code` (e.g. 409 when the next message does
 * not fit the request's `max_bytes`, or the consumer was deleted).
 */
export function isPullStatus(err: unknown, code: number): boolean {
  return err instanceof JetStreamError && (err as { code?: unknown }).code === code;
}

/** A publish carrying `Nats-Expected-Last-Subject-Sequence` met a subject that moved on: the writer's view is stale. */
export function isWrongLastSequence(err: unknown): boolean {
  return err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamWrongLastSequence;
}

/** A direct read asked for a message the stream does not hold (past the end, or deleted). */
export function isNoMessageFound(err: unknown): boolean {
  return err instanceof JetStreamApiError && err.code === JetStreamApiCodes.NoMessageFound;
}

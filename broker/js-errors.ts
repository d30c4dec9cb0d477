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

/**
 * A publish whose outcome is unknown (no ack arrived, or the stream had no responder during a
 * restart): retrying with the same Nats-Msg-Id is safe. A refusal or closed connection is not.
 */
/**
 * The stream refused to store a message because a limit is reached: per-subject backlog,
 * stream bytes or messages (10077, "store failed"), or storage resources (10047). Final: a
 * retry would be refused the same way.
 */
export function isStorageRefusal(err: unknown): boolean {
  return err instanceof JetStreamApiError && (err.code === 10077 || err.code === 10047);
}

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

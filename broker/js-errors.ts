import { JetStreamApiCodes, JetStreamApiError } from "@nats-io/jetstream";
import { PermissionViolationError } from "@nats-io/transport-node";

/** JetStream's numeric API errors, mapped once here so callers test meaning, not message text. */
export function isStreamNotFound(err: unknown): boolean {
  return err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound;
}

export function isConsumerNotFound(err: unknown): boolean {
  return err instanceof JetStreamApiError && err.code === JetStreamApiCodes.ConsumerNotFound;
}

/** The broker refused a publish or subscribe (nats.js wraps it as a request error's cause). */
export function isPermissionDenied(err: unknown): boolean {
  return err instanceof PermissionViolationError || (err instanceof Error && err.cause instanceof PermissionViolationError);
}

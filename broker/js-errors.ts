import { JetStreamApiCodes, JetStreamApiError } from "@nats-io/jetstream";

/** JetStream's numeric API errors, mapped once here so callers test meaning, not message text. */
export function isStreamNotFound(err: unknown): boolean {
  return err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound;
}

export function isConsumerNotFound(err: unknown): boolean {
  return err instanceof JetStreamApiError && err.code === JetStreamApiCodes.ConsumerNotFound;
}

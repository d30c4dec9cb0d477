import { randomUUID } from "node:crypto";
import { jetstream, type JetStreamClient } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { dmSubject, encodeMessage, principalId, PUBLISH, type CotalMessage, type Part, type Principal } from "../schemas/index.js";
import { isStorageRefusal, isTransientPublishError } from "./js-errors.js";
import { JS_OPTIONS } from "./js-access.js";
import type { Logger } from "./log.js";
import { storageRefusalError } from "./provision.js";
import { exponentialBackoff, retry, until } from "./retry.js";

/** What the broker stored for one publish. */
export interface StoredAck {
  id: string;
  stream: string;
  seq: number;
  /** The broker had already stored this id (a republish). */
  duplicate: boolean;
}

/** How one stored publish retries. */
export interface StoredPublishOptions {
  /** How long transient failures are retried, ms (default PUBLISH.totalTimeoutMs). */
  timeoutMs?: number | undefined;
  /** Stored only if the last message on this subject is at that stream sequence (0: none yet). */
  lastSubjectSequence?: number | undefined;
  /** Stop retrying (the connection closed). */
  stop?: () => boolean;
  log?: Logger | undefined;
}

/**
 * Publish a message with `Nats-Msg-Id = m.id`. Transient failures (a broker restart, a lost ack)
 * are retried with the same id until the timeout: the broker's dedupe makes that safe. A storage
 * refusal (a full stream, a message over its limit) throws the typed error that names it.
 */
export async function publishStored(js: JetStreamClient, subject: string, m: CotalMessage, o: StoredPublishOptions = {}): Promise<StoredAck> {
  const bytes = encodeMessage(m);
  const deadline = Date.now() + (o.timeoutMs ?? PUBLISH.totalTimeoutMs);
  const options = {
    msgID: m.id,
    timeout: PUBLISH.attemptTimeoutMs,
    ...(o.lastSubjectSequence !== undefined ? { expect: { lastSubjectSequence: o.lastSubjectSequence } } : {}),
  };
  try {
    const ack = await retry(() => js.publish(subject, bytes, options), {
      delays: until(deadline, exponentialBackoff(PUBLISH.retryFirstMs, PUBLISH.retryMaxMs)),
      retryable: (err) => !isStorageRefusal(err) && isTransientPublishError(err),
      ...(o.stop ? { stop: o.stop } : {}),
      onRetry: (err, attempt) => o.log?.debug({ err: (err as Error).message, attempt, id: m.id }, "publish not acknowledged; retrying with the same id"),
    });
    return { id: m.id, stream: ack.stream, seq: ack.seq, duplicate: ack.duplicate };
  } catch (err) {
    throw storageRefusalError(subject, err);
  }
}

/** A DM sent by a program that is not an endpoint (no presence, no roster): who sends it and what. */
export interface DirectMail {
  space: string;
  from: Principal;
  /** The sender's role on the card (`manager`). */
  fromRole?: string;
  to: Principal;
  parts: Part[];
  /** Its id; the same id sent again is stored once. */
  id?: string;
}

/**
 * Store one DM from `from` to `to` (`from` must be the connection's own principal: the broker's
 * publish permissions pin the sender token). Nobody need be joined: the recipient's inbox holds
 * every DM stored for it (the mesh service creates it from the stream's start).
 */
export function sendDirectMail(nc: NatsConnection, mail: DirectMail, o: StoredPublishOptions = {}): Promise<StoredAck> {
  const m: CotalMessage = {
    id: mail.id ?? randomUUID(),
    ts: Date.now(),
    space: mail.space,
    from: { id: principalId(mail.from), name: mail.from.actor, ...(mail.fromRole ? { role: mail.fromRole } : {}) },
    to: principalId(mail.to),
    parts: mail.parts,
  };
  return publishStored(jetstream(nc, JS_OPTIONS), dmSubject(mail.space, mail.to, mail.from), m, { stop: () => nc.isClosed(), ...o });
}

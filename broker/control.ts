import { randomUUID } from "node:crypto";
import type { Msg, NatsConnection, Subscription } from "@nats-io/transport-node";
import {
  ControlReply,
  ControlRequest,
  controlSubject,
  CotalError,
  describeIssues,
  parseSubject,
  principalId,
  type Principal,
} from "../schemas/index.js";
import { ConnectionClosedError, ControlCallError, MeshServiceUnavailableError, PermissionDeniedError } from "./errors.js";
import { isConnectionClosed, isNoResponders, isTimeout, permissionViolation } from "./js-errors.js";
import type { Logger } from "./log.js";

const enc = new TextEncoder();
const dec = new TextDecoder();

/**
 * Call `command` on `endpoint` (any instance) as `caller`; resolves with the reply's data.
 * Fails with a typed error: MeshServiceUnavailableError when nobody serves the subject
 * (`no-responders`) or no reply came in time (`timeout`); PermissionDeniedError naming the
 * subject when the broker refused this credential; ConnectionClosedError when the connection
 * is closed; ControlCallError when the callee answered with an error (its `outcome` says
 * whether the work was done).
 */
export async function callControl<T = unknown>(
  nc: NatsConnection,
  space: string,
  endpoint: string,
  command: string,
  caller: Principal,
  args: Record<string, unknown> = {},
  timeoutMs = 5_000,
  target = "one",
): Promise<T> {
  const req: ControlRequest = { id: randomUUID(), deadline: Date.now() + timeoutMs, caller: principalId(caller), args };
  const subject = controlSubject(space, endpoint, target, command, caller);
  let msg: Msg;
  try {
    msg = await nc.request(subject, enc.encode(JSON.stringify(req)), { timeout: timeoutMs });
  } catch (cause) {
    throw classifyRequestError(cause, `${endpoint}.${command}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(dec.decode(msg.data));
  } catch (cause) {
    throw new ControlCallError(command, "bad-reply", "the reply is not JSON", "unknown", cause);
  }
  const parsed = ControlReply.safeParse(json);
  if (!parsed.success) throw new ControlCallError(command, "bad-reply", describeIssues(parsed.error).join("; "), "unknown");
  if (!parsed.data.ok) {
    const e = parsed.data.error;
    throw new ControlCallError(command, e.code, e.message, e.outcome);
  }
  return parsed.data.data as T;
}

/** Map a failed control request to a typed error, decided by nats.js error types, never by text. */
export function classifyRequestError(cause: unknown, what: string): Error {
  const denied = permissionViolation(cause);
  if (denied) return new PermissionDeniedError(denied.operation === "subscription" ? "subscribe" : "publish", denied.subject, cause);
  if (isConnectionClosed(cause)) return new ConnectionClosedError(`call ${what}`, cause);
  if (isNoResponders(cause)) return new MeshServiceUnavailableError(what, cause, "no-responders");
  if (isTimeout(cause)) return new MeshServiceUnavailableError(what, cause, "timeout");
  return cause instanceof Error ? cause : new Error(String(cause));
}

/**
 * Reply subjects the control rail answers on: a requester's inbox, or the `_R_.` subject a NATS
 * service import substitutes. Anything else (`$JS.API.…`, `$KV.…`, `cotal.…`) would make the
 * service publish with its own rights wherever a caller points it.
 */
export function isReplyInbox(reply: string | undefined): reply is string {
  if (!reply || !(reply.startsWith("_INBOX.") || reply.startsWith("_R_."))) return false;
  return reply.split(".").every((t) => t !== "" && t !== "*" && t !== ">");
}

/** A control command handler: receives validated args and the caller taken from the subject. */
export type ControlHandler = (args: Record<string, unknown>, caller: Principal) => Promise<unknown>;

/**
 * Serve control commands for `endpoint` on the `one` target (queue group, so several instances
 * share the load). The caller is taken from the subject and must agree with the request body.
 * Handlers throw CotalError for domain failures; the reply carries code, message and outcome.
 * A request whose reply subject is not an inbox (see isReplyInbox) is dropped unexecuted.
 */
export function serveControl(
  nc: NatsConnection,
  space: string,
  endpoint: string,
  handlers: Record<string, ControlHandler>,
  log: Logger,
): Subscription {
  const subject = `cotal.${space}.ep.${endpoint}.one.*.*.*`;
  return nc.subscribe(subject, {
    queue: endpoint,
    callback: (err, msg) => {
      if (err) {
        // Terminal for this subscription: the service no longer serves the rail.
        const denied = permissionViolation(err);
        log.error({ err: denied ? new PermissionDeniedError("subscribe", denied.subject, err) : err, subject }, "control subscription ended");
        return;
      }
      void handle(msg).catch((e) => log.error({ err: e }, "control reply failed"));
    },
  });

  async function handle(msg: Msg) {
    if (!isReplyInbox(msg.reply)) {
      const p = parseSubject(msg.subject);
      log.warn(
        { caller: p.kind === "ep" ? principalId(p.from) : undefined, subject: msg.subject, reply: msg.reply ?? null },
        "control request with a reply subject that is not an inbox; dropped unexecuted",
      );
      return;
    }
    const reply = (r: ControlReply) => msg.respond(enc.encode(JSON.stringify(r)));
    const fail = (id: string, code: string, message: string, outcome: "executed" | "not-executed" | "unknown") =>
      reply({ id, ok: false, error: { code, message, outcome } });
    const parsedSubject = parseSubject(msg.subject);
    if (parsedSubject.kind !== "ep") return fail("", "bad-subject", "malformed control subject", "not-executed");
    let body: ControlRequest;
    try {
      const r = ControlRequest.safeParse(JSON.parse(dec.decode(msg.data)));
      if (!r.success) return fail("", "invalid-request", describeIssues(r.error).join("; "), "not-executed");
      body = r.data;
    } catch {
      return fail("", "invalid-request", "request is not valid JSON", "not-executed");
    }
    if (body.caller !== principalId(parsedSubject.from)) {
      log.warn({ subject: msg.subject, caller: body.caller }, "control caller disagrees with subject; refused");
      return fail(body.id, "forged-caller", "caller in the body disagrees with the subject", "not-executed");
    }
    if (body.deadline < Date.now()) return fail(body.id, "deadline-passed", "the request's deadline passed before it was served", "not-executed");
    const handler = handlers[parsedSubject.command];
    if (!handler) return fail(body.id, "unknown-command", `unknown command ${parsedSubject.command}`, "not-executed");
    try {
      const data = await handler(body.args, parsedSubject.from);
      reply({ id: body.id, ok: true, data });
    } catch (err) {
      if (err instanceof CotalError) return fail(body.id, err.code, err.message, "not-executed");
      log.error({ err, command: parsedSubject.command }, "control handler failed");
      fail(body.id, "internal", err instanceof Error ? err.message : String(err), "unknown");
    }
  }
}

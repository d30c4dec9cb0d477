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
import { ControlCallError, MeshServiceUnavailableError } from "./errors.js";
import type { Logger } from "./log.js";

const enc = new TextEncoder();
const dec = new TextDecoder();

/** Call `command` on `endpoint` (any instance) as `caller`; resolves with the reply's data. */
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
  let msg: Msg;
  try {
    msg = await nc.request(controlSubject(space, endpoint, target, command, caller), enc.encode(JSON.stringify(req)), { timeout: timeoutMs });
  } catch (cause) {
    throw new MeshServiceUnavailableError(`${endpoint}.${command}`, cause);
  }
  const parsed = ControlReply.safeParse(JSON.parse(dec.decode(msg.data)));
  if (!parsed.success) throw new ControlCallError(command, "bad-reply", describeIssues(parsed.error).join("; "), "unknown");
  if (!parsed.data.ok) {
    const e = parsed.data.error;
    throw new ControlCallError(command, e.code, e.message, e.outcome);
  }
  return parsed.data.data as T;
}

/** A control command handler: receives validated args and the caller taken from the subject. */
export type ControlHandler = (args: Record<string, unknown>, caller: Principal) => Promise<unknown>;

/**
 * Serve control commands for `endpoint` on the `one` target (queue group, so several instances
 * share the load). The caller is taken from the subject and must agree with the request body.
 * Handlers throw CotalError for domain failures; the reply carries code, message and outcome.
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
    callback: (_err, msg) => {
      void handle(msg).catch((err) => log.error({ err }, "control reply failed"));
    },
  });

  async function handle(msg: Msg) {
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

import { randomUUID } from "node:crypto";
import type { Msg, NatsConnection, Subscription } from "@nats-io/transport-node";
import type { z } from "zod";
import {
  assertToken,
  CONTROL_COMMANDS,
  ControlReply,
  ControlRequest,
  controlSubject,
  CotalError,
  describeIssues,
  parseSubject,
  principalId,
  type ControlTable,
  type Outcome,
  type Principal,
  type TableArgs,
  type TableParsedArgs,
  type TableReplyData,
} from "../schemas/index.js";
import { ConnectionClosedError, ControlCallError, MeshServiceUnavailableError, PermissionDeniedError } from "./errors.js";
import { retry, until } from "./retry.js";
import { isConnectionClosed, isNoResponders, isTimeout, permissionViolation } from "./js-errors.js";
import type { Logger } from "./log.js";
import { LogSampler } from "./log-sampler.js";

const enc = new TextEncoder();
const dec = new TextDecoder();

/** How a control call is made. */
export interface ControlCallOptions {
  /** How long to wait for the reply; also the request's deadline (default 5 s). */
  timeoutMs?: number;
  /** `one` (any instance, the default) or an instance id. */
  target?: string;
}

/**
 * Call `command` on `endpoint` as `caller`; resolves with the reply's data, unchecked (the
 * envelope is checked). Prefer a typed caller (callControl, controlCaller), which checks the data.
 * Fails with a typed error: MeshServiceUnavailableError when nobody serves the subject
 * (`no-responders`) or no reply came in time (`timeout`); PermissionDeniedError naming the
 * subject when the broker refused this credential; ConnectionClosedError when the connection
 * is closed; ControlCallError when the callee answered with an error (its `outcome` says
 * whether the work was done) or the reply is not a control reply (`bad-reply`).
 */
export async function requestControl(
  nc: NatsConnection,
  space: string,
  endpoint: string,
  command: string,
  caller: Principal,
  args: Record<string, unknown> = {},
  opts: ControlCallOptions = {},
): Promise<unknown> {
  const timeoutMs = opts.timeoutMs ?? 5_000;
  const req: ControlRequest = { id: randomUUID(), deadline: Date.now() + timeoutMs, caller: principalId(caller), args };
  const subject = controlSubject(space, endpoint, opts.target ?? "one", command, caller);
  const body = enc.encode(JSON.stringify(req));
  // A read is asked once more, within the same time, when half of it passed unanswered: a service's
  // connection the server cut as a slow consumer (one credential's flood on a starved host) takes
  // the requests it had not read with it. Until the service is back, nobody serves the subject: a
  // read that meets no responders is asked again every 100 ms for up to a second (within that first
  // half). A command that changes something is never sent twice.
  const again = ASKED_AGAIN.has(command);
  const firstMs = again ? Math.max(1, Math.floor(timeoutMs / 2)) : timeoutMs;
  const firstEnds = Date.now() + firstMs;
  // A service that is not running at all is reported after this, not after half the timeout.
  const unservedEnds = Date.now() + Math.min(firstMs, UNSERVED_WINDOW_MS);
  const first = async (): Promise<Msg> => {
    for (;;) {
      try {
        return await nc.request(subject, body, { timeout: Math.max(1, firstEnds - Date.now()) });
      } catch (cause) {
        if (!again || !isNoResponders(cause) || Date.now() + UNSERVED_RETRY_MS >= unservedEnds) throw cause;
        await new Promise((r) => setTimeout(r, UNSERVED_RETRY_MS));
      }
    }
  };
  let msg: Msg;
  try {
    msg = await first().catch((cause: unknown) => {
      if (!again || !isTimeout(cause)) throw cause;
      return nc.request(subject, body, { timeout: timeoutMs - firstMs });
    });
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
  return parsed.data.data;
}

/** How often, and for how long at most, a read that met no responders is asked again, ms (a reconnect takes less). */
const UNSERVED_RETRY_MS = 100;
const UNSERVED_WINDOW_MS = 1_000;

/** Commands that only read (the mesh service's, the artifact store's and the managers'): safe to ask twice. */
const ASKED_AGAIN: ReadonlySet<string> = new Set([
  "ping",
  "lookup",
  "roster",
  "history",
  "channels",
  "grant",
  "may-approve",
  "whoami",
  "artifact-get",
  "ps",
  "status",
  "personas",
]);

/** The arguments after `caller`: args may be left out when the command needs none. */
export type ControlCallRest<T extends ControlTable, C extends keyof T> =
  Record<string, never> extends TableArgs<T, C> ? [args?: TableArgs<T, C>, opts?: ControlCallOptions] : [args: TableArgs<T, C>, opts?: ControlCallOptions];

/** A control caller typed by a command table. */
export type ControlCaller<T extends ControlTable> = <C extends keyof T & string>(
  nc: NatsConnection,
  space: string,
  command: C,
  caller: Principal,
  ...rest: ControlCallRest<T, C>
) => Promise<TableReplyData<T, C>>;

/**
 * A caller for the commands of `table`: the endpoint comes from the table, and the reply's data
 * is checked against the command's reply schema. Data that does not match is a ControlCallError
 * `bad-reply` naming the command and the field (outcome unknown: the callee said it ran, but
 * what it returned cannot be trusted).
 */
export function controlCaller<T extends ControlTable>(
  table: T,
  /** `retryUnservedMs`: ask again while nobody serves the subject (no responders: nothing ran), for up to this long. */
  caller: { retryUnservedMs?: number } = {},
): ControlCaller<T> {
  const unserved = (err: unknown) => err instanceof MeshServiceUnavailableError && err.reason === "no-responders";
  function request(
    nc: NatsConnection,
    space: string,
    endpoint: string,
    command: string,
    who: Principal,
    args: Record<string, unknown>,
    opts?: ControlCallOptions,
  ) {
    return retry(() => requestControl(nc, space, endpoint, command, who, args, opts), {
      delays: until(Date.now() + (caller.retryUnservedMs ?? 0), (n) => (n === 0 ? 0 : 200)),
      retryable: unserved,
    });
  }
  return async function call<C extends keyof T & string>(
    nc: NatsConnection,
    space: string,
    command: C,
    who: Principal,
    ...rest: ControlCallRest<T, C>
  ): Promise<TableReplyData<T, C>> {
    const [args, opts] = rest as [Record<string, unknown> | undefined, ControlCallOptions | undefined];
    const spec = table[command]!;
    const data = await request(nc, space, spec.endpoint, command, who, args ?? {}, opts);
    const r = spec.reply.safeParse(data);
    if (!r.success) {
      throw new ControlCallError(
        command,
        "bad-reply",
        `the reply does not match the ${command} reply schema: ${describeIssues(r.error).join("; ")}`,
        "unknown",
      );
    }
    return r.data as TableReplyData<T, C>;
  };
}

/**
 * Call one of Cotal's control commands (CONTROL_COMMANDS), typed by its name:
 * `callControl(nc, space, "join", me, { channel })` resolves with the checked `join` reply.
 * Errors as requestControl, plus `bad-reply` when the data does not match the command's schema.
 */
export const callControl: ControlCaller<typeof CONTROL_COMMANDS> = controlCaller(CONTROL_COMMANDS);

/** Map a failed control request to a typed error, decided by nats.js error types, never by text. */
export function classifyRequestError(cause: unknown, what: string): Error {
  const denied = permissionViolation(cause);
  if (denied) return new PermissionDeniedError(denied.operation === "subscription" ? "subscribe" : "publish", denied.subject, cause);
  if (isConnectionClosed(cause)) return new ConnectionClosedError(`call ${what}`, cause);
  if (isNoResponders(cause)) return new MeshServiceUnavailableError(what, cause, "no-responders");
  if (isTimeout(cause)) return new MeshServiceUnavailableError(what, cause, "timeout");
  return cause instanceof Error ? cause : new Error(String(cause));
}

/** The caller a control subject names (its last two tokens; the broker pins them to the sender), for sampled warnings. */
function callerOf(subject: string): string {
  const p = parseSubject(subject);
  return p.kind === "ep" ? principalId(p.from) : "?";
}

/** The header a sharing service import adds: who the server says sent the request (nats-server's ClientInfo). */
export const REQUEST_INFO_HEADER = "Nats-Request-Info";

/**
 * Reply subjects the control rail answers on: a requester's inbox, or the `_R_.` subject a NATS
 * service import substitutes. Anything else (`$JS.API.…`, `$KV.…`, `cotal.…`) would make the
 * service publish with its own rights wherever a caller points it.
 */
export function isReplyInbox(reply: string | undefined): reply is string {
  if (!reply || !(reply.startsWith("_INBOX.") || reply.startsWith("_R_."))) return false;
  return reply.split(".").every((t) => t !== "" && t !== "*" && t !== ">");
}

/**
 * The handler of one command of `T`: receives the checked args, the caller taken from the subject
 * and, where serveControl was given `authenticate`, the server's `Nats-Request-Info` (already checked by it).
 */
export type ControlHandler<T extends ControlTable, C extends keyof T> = (
  args: TableParsedArgs<T, C>,
  caller: Principal,
  requestInfo?: string,
) => Promise<z.input<T[C]["reply"]>>;

/** A handler for every command of `T`. */
export type ControlHandlers<T extends ControlTable> = { [C in keyof T]: ControlHandler<T, C> };

/**
 * Serve the commands of `table` (all of `endpoint`) on the `one` target (queue group, so several
 * instances share the load). The caller is taken from the subject and must agree with the
 * request body. Args are checked against the command's schema before the handler runs
 * (`invalid-args`, naming the field; not executed). Handlers throw CotalError for domain
 * failures; the reply carries code, message and outcome. The handler's data is checked against
 * the reply schema before it is sent: a mismatch is a bug, logged and answered `internal`
 * naming the field (outcome executed: the handler ran to the end). A request whose reply
 * subject is not an inbox (see isReplyInbox) is dropped unexecuted. Warnings a caller can cause
 * once per request go through a LogSampler keyed by the caller the subject names: a flood of them
 * costs a line and a count, not a line each.
 */
export function serveControl<T extends ControlTable>(
  nc: NatsConnection,
  space: string,
  endpoint: string,
  table: T,
  handlers: ControlHandlers<T>,
  log: Logger,
  opts: {
    target?: string;
    /**
     * Checks the caller the subject names against who the server says sent the request (the
     * `Nats-Request-Info` header a sharing import stamps; undefined when none did). Only a service
     * reached through such an import (the data account's) may pass this: anywhere else the header
     * is whatever the sender wrote. Throws a CotalError to refuse (not executed).
     */
    authenticate?: (caller: Principal, requestInfo: string | undefined, command: string) => Promise<void>;
    /** How long one caller's repeated warnings are counted instead of logged, ms (LogSampler; default 10 s). */
    warnIntervalMs?: number;
  } = {},
): Subscription {
  const strays = Object.entries(table).filter(([, spec]) => spec.endpoint !== endpoint);
  if (strays.length)
    throw new Error(`serveControl(${endpoint}): the table holds commands of other endpoints: ${strays.map(([c, s]) => `${c} (${s.endpoint})`).join(", ")}`);
  // `one` is served as a queue group (any instance); an instance id only by that instance.
  const target = opts.target ?? "one";
  const subject = `cotal.${space}.ep.${endpoint}.${assertToken("name", "control target", target)}.*.*.*`;
  const sampled = new LogSampler(log, opts.warnIntervalMs !== undefined ? { intervalMs: opts.warnIntervalMs } : {});
  const sub = nc.subscribe(subject, {
    ...(target === "one" ? { queue: endpoint } : {}),
    callback: (err, msg) => {
      if (err) {
        // Terminal for this subscription: the service no longer serves the rail.
        const denied = permissionViolation(err);
        log.error({ err: denied ? new PermissionDeniedError("subscribe", denied.subject, err) : err, subject }, "control subscription ended");
        return;
      }
      // Checked here, before anything is allocated for the request: a flood of reply-less requests costs this much each.
      if (!isReplyInbox(msg.reply)) {
        sampled.warn(
          callerOf(msg.subject),
          "control-reply-not-inbox",
          { subject: msg.subject, reply: msg.reply ?? null },
          "control request with a reply subject that is not an inbox; dropped unexecuted",
        );
        return;
      }
      void handle(msg).catch((e) => sampled.error(callerOf(msg.subject), "control-reply-failed", { err: e }, "control reply failed"));
    },
  });
  // What is still only counted is written when the rail stops.
  void sub.closed.then(() => sampled.stop());
  return sub;

  async function handle(msg: Msg) {
    const reply = (r: ControlReply) => msg.respond(enc.encode(JSON.stringify(r)));
    const fail = (id: string, code: string, message: string, outcome: Outcome) => reply({ id, ok: false, error: { code, message, outcome } });
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
      sampled.warn(
        principalId(parsedSubject.from),
        "control-forged-caller",
        { subject: msg.subject, caller: body.caller },
        "control caller disagrees with subject; refused",
      );
      return fail(body.id, "forged-caller", "caller in the body disagrees with the subject", "not-executed");
    }
    if (body.deadline < Date.now()) return fail(body.id, "deadline-passed", "the request's deadline passed before it was served", "not-executed");
    const command = parsedSubject.command;
    const spec = Object.hasOwn(table, command) ? table[command] : undefined;
    if (!spec) return fail(body.id, "unknown-command", `unknown command ${command}`, "not-executed");
    const args = spec.args.safeParse(body.args);
    if (!args.success) return fail(body.id, "invalid-args", `Invalid ${command} arguments: ${describeIssues(args.error).join("; ")}.`, "not-executed");
    let data: unknown;
    try {
      const requestInfo = opts.authenticate ? msg.headers?.get(REQUEST_INFO_HEADER) || undefined : undefined;
      await opts.authenticate?.(parsedSubject.from, requestInfo, command);
      data = await (handlers[command] as ControlHandler<ControlTable, string>)(args.data, parsedSubject.from, requestInfo);
    } catch (err) {
      if (err instanceof CotalError) return fail(body.id, err.code, err.message, "not-executed");
      sampled.error(principalId(parsedSubject.from), `control-handler-failed-${command}`, { err, command }, "control handler failed");
      return fail(body.id, "internal", err instanceof Error ? err.message : String(err), "unknown");
    }
    const checked = spec.reply.safeParse(data);
    if (!checked.success) {
      const issues = describeIssues(checked.error);
      log.error({ command, issues }, "control handler's reply does not match its schema; answered internal");
      return fail(body.id, "internal", `the ${command} reply does not match its schema: ${issues.join("; ")}`, "executed");
    }
    reply({ id: body.id, ok: true, data: checked.data });
  }
}

import { TimeoutError, type Msg, type NatsConnection, type Payload, type RequestOptions } from "@nats-io/transport-node";
import { JS_API, principalId } from "../schemas/index.js";
import { SERVICE_PRINCIPALS } from "./auth/permissions.js";
import { credsFileOwner } from "./connect.js";

/** JetStream handles for a connection: never probe `$JS.API.INFO` (clients may not call it). */
export const JS_OPTIONS = { checkAPI: false } as const;

/** JetStream's "not enabled for account" error code. */
const NOT_ENABLED = 10039;

/**
 * The connection a JetStream client should use for `creds`.
 *
 * In a static space every identity but the mesh service is in the clients account, which has no
 * JetStream of its own and reaches the data account's API through service imports under the same
 * `$JS.API.…` subjects (docs/security.md). nats-server (2.9.10, and still 2.10.27: test/auth/server-behaviour.test.ts) answers every such request twice
 * there: its own stand-in ("JetStream not enabled for account", 10039) and the data account's
 * real answer through the import, in either order. For those connections a JetStream API request
 * waits for the real answer (and returns the stand-in only if nothing else came in time). The
 * imports cannot be remapped to another prefix instead: on 2.9.10 an answer aimed at a remapped
 * wildcard import crashes the server.
 */
export function jetStreamConnection(nc: NatsConnection, creds: string | undefined): NatsConnection {
  const who = credsFileOwner(creds);
  if (who === undefined || who === principalId(SERVICE_PRINCIPALS.mesh)) return nc; // open mesh or data account
  return new Proxy(nc, {
    get(target, prop) {
      if (prop === "request") return (subject: string, payload?: Payload, opts?: RequestOptions) => apiRequest(target, subject, payload, opts);
      const value = Reflect.get(target, prop, target) as unknown;
      return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

function isStandIn(m: Msg): boolean {
  try {
    return (JSON.parse(new TextDecoder().decode(m.data)) as { error?: { err_code?: number } }).error?.err_code === NOT_ENABLED;
  } catch {
    return false;
  }
}

async function apiRequest(nc: NatsConnection, subject: string, payload?: Payload, opts?: RequestOptions): Promise<Msg> {
  if (!subject.startsWith(`${JS_API}.`)) return nc.request(subject, payload, opts);
  const maxWait = opts?.timeout ?? 5_000;
  const answers = await nc.requestMany(subject, payload, { strategy: "count", maxMessages: 2, maxWait, ...(opts?.headers ? { headers: opts.headers } : {}) });
  let standIn: Msg | undefined;
  for await (const m of answers) {
    if (!isStandIn(m)) return m;
    standIn = m;
  }
  if (standIn) return standIn;
  throw new TimeoutError();
}

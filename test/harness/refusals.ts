// The broker's permission refusals on one raw connection, so a core publish or a subscription
// can be judged refused or let through (a refusal is an asynchronous error, never an exception).
import { PermissionViolationError, type NatsConnection } from "@nats-io/transport-node";

export function refusals(nc: NatsConnection): (op: "publish" | "subscription", subject: string) => Promise<boolean> {
  const seen: PermissionViolationError[] = [];
  void (async () => {
    for await (const s of nc.status()) if (s.type === "error" && s.error instanceof PermissionViolationError) seen.push(s.error);
  })();
  return async (op, subject) => {
    // A refusal arrives before the answer to a PING sent after the operation; the second round
    // trip lets the client hand that error on first.
    await nc.flush();
    await nc.flush();
    return seen.some((e) => e.operation === op && e.subject === subject);
  };
}

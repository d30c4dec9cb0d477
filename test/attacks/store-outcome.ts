// What an attacker's JetStream write came to, as the client sees it: the stream's ack ("stored"),
// or the broker's permission refusal ("refused"). Anything else (a timeout, a stream error) throws:
// it is neither, and a test must not count it as a refusal.
import type { NatsConnection } from "@nats-io/transport-node";
import { permissionViolation } from "../../broker/index.js";

export async function storeOutcome(nc: NatsConnection, subject: string, value: object): Promise<"stored" | "refused"> {
  try {
    const r = await nc.request(subject, new TextEncoder().encode(JSON.stringify(value)), { timeout: 3_000 });
    const ack = JSON.parse(new TextDecoder().decode(r.data)) as { seq?: number; error?: unknown };
    if (ack.seq === undefined) throw new Error(`not stored: ${JSON.stringify(ack.error)}`);
    return "stored";
  } catch (err) {
    if (permissionViolation(err)) return "refused";
    throw err;
  }
}

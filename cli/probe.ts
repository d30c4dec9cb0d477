import type { NatsConnection } from "@nats-io/transport-node";
import { callControl, connectMesh, SERVICE_PRINCIPALS, type MeshAddress } from "../broker/index.js";
import type { ControlReplyData, Principal } from "../schemas/index.js";

/**
 * True when a server answers at `addr` with this credential (a round trip). JetStream itself is
 * not asked: a static mesh's clients account has none of its own (docs/security.md), and the
 * data account's JetStream is proven by provisioning.
 */
export async function serverAnswers(addr: MeshAddress, timeoutMs = 2_000): Promise<boolean> {
  let nc: NatsConnection | undefined;
  try {
    nc = await connectMesh({ ...addr, name: "cotal-probe" });
    await Promise.race([nc.flush(), new Promise((_, reject) => setTimeout(() => reject(new Error("no answer")), timeoutMs).unref())]);
    return true;
  } catch {
    return false;
  } finally {
    await nc?.close().catch(() => undefined);
  }
}

/** What the mesh service said when pinged. */
export type ServicePing = ControlReplyData<"ping">;

/** Ping the space's mesh service on the control rail as `caller` (default: the host's CLI); undefined when none answers in time. */
export async function pingMeshService(
  nc: NatsConnection,
  space: string,
  timeoutMs = 1_500,
  caller: Principal = SERVICE_PRINCIPALS.cli,
): Promise<ServicePing | undefined> {
  try {
    return await callControl(nc, space, "ping", caller, {}, { timeoutMs });
  } catch {
    return undefined;
  }
}

import type { NatsConnection } from "@nats-io/transport-node";
import { callControl, connectMesh, MESH_ENDPOINT, SERVICE_PRINCIPALS, type MeshAddress } from "../broker/index.js";

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
export interface ServicePing {
  space: string;
  pid: number;
}

/** Ping the space's mesh service on the control rail; undefined when none answers in time. */
export async function pingMeshService(nc: NatsConnection, space: string, timeoutMs = 1_500): Promise<ServicePing | undefined> {
  try {
    return await callControl<ServicePing>(nc, space, MESH_ENDPOINT, "ping", SERVICE_PRINCIPALS.cli, {}, timeoutMs);
  } catch {
    return undefined;
  }
}

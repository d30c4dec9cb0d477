import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { callControl, connectMesh, MESH_ENDPOINT, SERVICE_PRINCIPALS, type MeshAddress } from "../broker/index.js";

/** True when a server answers at `addr` and its JetStream answers an account-info request. */
export async function serverAnswers(addr: MeshAddress, timeoutMs = 2_000): Promise<boolean> {
  let nc: NatsConnection | undefined;
  try {
    nc = await connectMesh({ ...addr, name: "cotal-probe" });
    const jsm = await jetstreamManager(nc, { timeout: timeoutMs });
    await jsm.getAccountInfo();
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

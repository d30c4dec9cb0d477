// Connecting an Endpoint as a name acting-as.ts has settled, the space checked first; it decides
// nothing about who may act as whom.
import { Endpoint, type EndpointOptions } from "../../broker/index.js";
import type { MeshTarget } from "../mesh-client/mesh-target.js";
import { MeshSession } from "../mesh-client/session.js";

/**
 * Connect an Endpoint acting as `name` on the target mesh (not joined). The space is checked
 * first where the credential may look (the operator's may; an agent's may not, and then the
 * mesh service's answers speak for it), so a space that was never provisioned is reported as
 * such (exit 3) rather than as a raw JetStream error.
 */
export async function connectAs(target: MeshTarget, name: string, extra: Partial<EndpointOptions> = {}): Promise<Endpoint> {
  const session = await MeshSession.open(target);
  await session.close();
  return Endpoint.connect({ ...extra, server: target.server, space: target.space, creds: target.creds, name });
}

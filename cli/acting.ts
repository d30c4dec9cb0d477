import { Endpoint, type EndpointOptions } from "../broker/index.js";
import { CotalError } from "../schemas/index.js";
import type { MeshTarget } from "./context.js";
import { SpaceNotProvisionedError } from "./errors.js";
import { isStreamNotFound } from "./session.js";

/**
 * Connect an Endpoint acting as `name` on the target mesh (not joined). A space that was
 * never provisioned is reported as such rather than as a raw JetStream error.
 */
export async function connectAs(target: MeshTarget, name: string, extra: Partial<EndpointOptions> = {}): Promise<Endpoint> {
  try {
    return await Endpoint.connect({ ...extra, server: target.server, space: target.space, creds: target.creds, name });
  } catch (err) {
    if (!(err instanceof CotalError) && (isStreamNotFound(err) || isStreamNotFound((err as Error).cause))) {
      throw new SpaceNotProvisionedError(target.space, target.server, err);
    }
    throw err;
  }
}

import { fmtCreds } from "@nats-io/jwt";
import { createUser } from "@nats-io/nkeys";
import type { NatsConnection } from "@nats-io/transport-node";
import { callControl } from "../control.js";
import type { MintReply } from "../mesh-service.js";
import type { Principal } from "../../schemas/index.js";
import { SERVICE_PRINCIPALS, type Profile } from "./permissions.js";

/** What to mint, as asked by `cotal mint`. */
export interface MintRequest {
  name: string;
  profile: Profile;
  allowSubscribe?: string[];
  allowPublish?: string[];
  role?: string;
  provision?: boolean;
  /** It runs a seat: may publish its own event plane (agent; unset: only if it has allowPublish). */
  events?: boolean;
  /** Agent: personas it may spawn helpers of (docs/manager.md, Helpers). */
  allowSpawn?: string[];
  /** Agent with allowSpawn: helpers it may hold at once. */
  spawnLimit?: number;
  expiresInMs?: number;
}

/**
 * Ask the mesh service (the only minter at run time) for a credential. The user key pair is
 * generated here, so the seed never crosses the wire; the result is a `.creds` file's bytes.
 */
export async function requestCredential(
  nc: NatsConnection,
  space: string,
  req: MintRequest,
  /** Who asks: the operator's tool (default), or a manager's credential minting for its seats. */
  caller: Principal = SERVICE_PRINCIPALS.cli,
): Promise<{ creds: Uint8Array; reply: MintReply }> {
  const kp = createUser();
  const reply = await callControl(nc, space, "mint", caller, { ...req, userPub: kp.getPublicKey() });
  return { creds: fmtCreds(reply.jwt, kp), reply };
}

/** Ask the mesh service to revoke every credential issued to `name`. */
export async function requestRevoke(
  nc: NatsConnection,
  space: string,
  name: string,
  caller: Principal = SERVICE_PRINCIPALS.cli,
): Promise<{ principal: string; revoked: number }> {
  return callControl(nc, space, "revoke", caller, { name });
}

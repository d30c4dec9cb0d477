import { fmtCreds } from "@nats-io/jwt";
import type { NatsConnection } from "@nats-io/transport-node";
import { callControl } from "../control.js";
import { connectMesh } from "../connect.js";
import { MeshServiceUnavailableError } from "../errors.js";
import { retry, until } from "../retry.js";
import type { MintReply } from "../mesh-service.js";
import { CotalError, type Principal } from "../../schemas/index.js";
import { SERVICE_PRINCIPALS, type Profile } from "./permissions.js";
import { newNkey } from "./native-nkeys.js";

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
  /** Person: the seats whose permission asks it may answer (actor names, or `*`). */
  approve?: string[];
  /** Agent with allowSpawn: the sha256 of each persona's agent file as read at mint (personaDigests in claude/). */
  personaDigests?: Record<string, string>;
  /** Person: may steer seats (docs/security.md, People). */
  steer?: boolean;
  expiresInMs?: number;
  /** Operator: the leaf credential (`<host>_leaf`) of the host this identity runs on (leaf-scope.ts). */
  leaf?: string;
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
  const kp = newNkey("user");
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

/** A credential minted through a leaf host that the hub did not come to carry in time. */
export class LeafScopeWaitError extends CotalError {
  constructor(who: string, waitedMs: number, cause?: unknown) {
    super("leaf-scope-wait", `The mesh did not answer ${who} through this leaf host within ${Math.round(waitedMs / 1000)} s of its mint.`, {
      remedy:
        "The hub remakes a leaf host's connection when its scope widens: check the leaf server's log for its connection to the hub (`Leafnode connection created`), and the mesh service's for `leaf scope not updated`.",
      cause,
    });
  }
}

/**
 * Wait until the mesh answers `who`'s new credential (a `ping` as it, with that credential), for a
 * mint whose reply says `leafReconnect`: the hub is remaking the leaf host's connection so that it
 * carries the name, and until then what the seat sends would be dropped on the way. Anything but
 * a timeout or a momentary no-answer (the connection being remade) is thrown at once.
 */
export async function awaitCredentialCarried(server: string, credsFile: string, space: string, who: Principal, timeoutMs = 20_000): Promise<void> {
  const started = Date.now();
  const nc = await connectMesh({ server, creds: credsFile, name: "cotal-leaf-probe" });
  try {
    await retry(() => callControl(nc, space, "ping", who, {}, { timeoutMs: 500 }), {
      delays: until(started + timeoutMs, (n) => (n === 0 ? 0 : 100)),
      retryable: (err) => err instanceof MeshServiceUnavailableError,
    });
  } catch (err) {
    if (err instanceof MeshServiceUnavailableError) throw new LeafScopeWaitError(`${who.owner}.${who.actor}`, Date.now() - started, err);
    throw err;
  } finally {
    await nc.close();
  }
}

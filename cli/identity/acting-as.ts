// Who a command acts as, decided from its credential, --as and --impersonate (os-user-name.ts gives
// the default name); connect-as.ts then connects an Endpoint as that name.
import { connectMesh, credsFileOwner, SERVICE_PRINCIPALS } from "../../broker/index.js";
import { parsePrincipal, principalId } from "../../schemas/index.js";
import type { MeshTarget } from "../mesh-client/mesh-target.js";
import { UsageError } from "../terminal/errors.js";
import { defaultActorName } from "./os-user-name.js";

/** Who a command acts as, and who really acts when that is someone else. */
export interface ActingIdentity {
  name: string;
  /** Set when the operator's credential speaks for `name` (`--impersonate`). */
  impersonatedBy?: string;
}

/**
 * The identity comes from the credential. A minted credential acts as its own name: `--as` may
 * repeat it, any other name is refused. The mesh host's operator credential may act for any name,
 * but only with `--impersonate`, and then every message is marked as sent by the operator. On an
 * open mesh (no credentials) nothing is verified: `--as`, the person recorded at the mesh host
 * (`cotal up --me`), or the OS user name, as given.
 */
export async function actingIdentity(target: MeshTarget, as: string | undefined, impersonate: boolean | undefined): Promise<ActingIdentity> {
  const owner = credsFileOwner(target.creds);
  if (owner === undefined) {
    if (impersonate) {
      // Blame --impersonate only on a mesh that answers, open: nothing answering, or a mesh that
      // wants a credential, is that error (connecting says which), not this one.
      await (await connectMesh({ server: target.server, name: "cotal" })).close();
      throw new UsageError(`--impersonate needs a credential: the mesh at ${target.server} is open and verifies no names.`, {
        remedy: "Leave --impersonate out, or pass the mesh host's operator credential with --creds.",
      });
    }
    return { name: as ?? target.person ?? defaultActorName() };
  }
  const operator = principalId(SERVICE_PRINCIPALS.cli);
  if (owner === operator) {
    const name = as ?? defaultActorName();
    if (!impersonate) {
      throw new UsageError(`With the mesh host's operator credential, acting as ${name} means speaking for someone else.`, {
        remedy: `Add --impersonate to do it on purpose (every message is marked "sent by the operator"), or use ${name}'s own credential (\`cotal mint ${name}\`, then --creds).`,
      });
    }
    return { name, impersonatedBy: operator };
  }
  const self = parsePrincipal(owner).actor;
  if (as !== undefined && as !== self) {
    throw new UsageError(`This credential is ${owner}'s: it cannot act as ${as}.`, {
      remedy: `Leave --as out (it acts as ${self}), or use ${as}'s own credential.`,
    });
  }
  if (impersonate)
    throw new UsageError(`--impersonate needs the mesh host's operator credential; this one is ${owner}'s.`, { remedy: "Leave --impersonate out." });
  return { name: self };
}

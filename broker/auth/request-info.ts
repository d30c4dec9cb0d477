import { z } from "zod";
import { CotalError, parsePrincipal, principalId, withArticle, type Principal } from "../../schemas/index.js";
import type { IdentityRegistry } from "./identity-registry.js";
import { leafHostManager, PROFILES, SERVICE_PRINCIPALS, type Profile } from "./permissions.js";

/**
 * Who sent a control request, as the server says: the `Nats-Request-Info` header the clients
 * account's control-rail import stamps (space-accounts.ts, `share`). nats-server 2.10.27 writes it
 * itself and replaces whatever header the sender brought, from a client and from a leaf node alike;
 * a request that came over a leaf connection is named as the leaf credential, never as the client
 * behind it (verified here: test/attacks/leaf-credential.test.ts).
 */
const RequestInfo = z.object({
  /** The user's public key. */
  user: z.string().regex(/^U[A-Z2-7]{55}$/),
  /** The `name` of the user's JWT: Cotal mints it as the principal id. */
  name_tag: z.string().optional(),
  /** The JWT's tags (mint.ts credsTags): signed with the credential, so they name its profile. */
  tags: z.array(z.string()).optional(),
});

/** The credential a request came from. */
export interface Sender {
  /** Its user public key. */
  user: string;
  /** The principal id it was minted for (its JWT's name). */
  name: string;
  /** The profile it was minted with, from its signed tags (undefined if it carries none). */
  profile: Profile | undefined;
}

/** The sender named by a `Nats-Request-Info` header; undefined when there is none or it does not parse. */
export function senderOf(requestInfo: string | undefined): Sender | undefined {
  if (!requestInfo) return undefined;
  let raw: unknown;
  try {
    raw = JSON.parse(requestInfo);
  } catch {
    return undefined;
  }
  const r = RequestInfo.safeParse(raw);
  if (!r.success) return undefined;
  const tag = r.data.tags?.find((t) => t.startsWith("cotal-profile:"))?.slice("cotal-profile:".length);
  const profile = (PROFILES as readonly string[]).includes(tag ?? "") ? (tag as Profile) : undefined;
  return { user: r.data.user, name: r.data.name_tag ?? "", profile };
}

/** The host manager of a leaf credential named by its principal id, if the name is a leaf's. */
function leafOf(name: string): Principal | undefined {
  try {
    return leafHostManager(parsePrincipal(name));
  } catch {
    return undefined;
  }
}

/** The connection a request came from may not act as the principal its subject names. */
export class SenderMismatchError extends CotalError {
  constructor(sender: Sender, caller: Principal, why: string) {
    super(
      "not-allowed",
      `This connection's credential is ${sender.name || sender.user} (${sender.profile ?? "no profile"}); it may not act as ${principalId(caller)}: ${why}.`,
      {
        remedy: "Each identity calls the mesh with its own credential; a leaf host acts only as its own manager and agents.",
      },
    );
  }
}

/**
 * A request came without the server's word on who sent it: over a clients account signed before
 * the control rail's import shared who asks, or from inside the data account. In static mode it is
 * refused whatever it asks (the reason travels in the message: a control reply carries no remedy).
 */
export class UnauthenticatedRequestError extends CotalError {
  constructor(what: string) {
    super(
      "not-allowed",
      `The request to ${what} carries no sender stamped by the server (Nats-Request-Info), so it cannot be authorized: the space's clients account may predate the control rail's sharing import; run \`cotal up\` on the mesh host (it signs the accounts again).`,
      { remedy: "Run `cotal up` on the mesh host: it signs the space's accounts again." },
    );
  }
}

/**
 * May the credential that sent a request act as `caller` (the principal its subject names)? The
 * operator's tool may act as anyone (`--as`, `--impersonate`). Every other credential is itself
 * only: the broker already pins its subjects, this holds even if a permission is wrong. A leaf
 * host's credential carries every identity running on that host, checked there by its own server,
 * so the hub cannot tell them apart: it may act as its host's manager (`<host>` for
 * `<host>_leaf`) and as agents, readers and observers, never as the operator or any other of Cotal's
 * services, another manager, an admin or another leaf.
 */
export async function checkSender(
  sender: Sender | undefined,
  caller: Principal,
  identities: IdentityRegistry,
  /** What the request does, for the refusal's wording (minting, revoking; else acting as the caller). */
  privileged?: string,
): Promise<void> {
  // Static mode fails closed: without the server's stamp the subject's caller is only the sender's word.
  if (!sender) throw new UnauthenticatedRequestError(privileged ?? `act as ${principalId(caller)}`);
  if (sender.profile === "cli" && sender.name === principalId(SERVICE_PRINCIPALS.cli)) return;
  if (sender.profile !== "leaf") {
    if (sender.name !== principalId(caller)) throw new SenderMismatchError(sender, caller, "a credential acts only as the name it was minted for");
    return;
  }
  if (caller.actor.startsWith("cotal_")) throw new SenderMismatchError(sender, caller, "names starting cotal_ are Cotal's own services");
  const host = leafOf(sender.name);
  if (host && principalId(host) === principalId(caller)) return;
  const rec = await identities.get(caller);
  if (rec && rec.profile !== "agent" && rec.profile !== "reader" && rec.profile !== "observer") {
    throw new SenderMismatchError(
      sender,
      caller,
      `${principalId(caller)} is ${rec.profile === "manager" ? "another host's manager" : withArticle(rec.profile)}`,
    );
  }
}

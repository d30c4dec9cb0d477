import { z } from "zod";
import { InvalidTokenError } from "./errors.js";
import { ALPHABETS, assertToken } from "./tokens.js";

/** The owner of every principal on open and static meshes (docs/SPEC.md §1). */
export const LOCAL_OWNER = "local";

/** A principal `<owner>.<actor>`: who sent a message, who owns a seat. */
export interface Principal {
  readonly owner: string;
  readonly actor: string;
}

/** Build a principal, refusing invalid tokens. */
export function principal(owner: string, actor: string): Principal {
  return { owner: assertToken("principal", "owner", owner), actor: assertToken("principal", "actor name", actor) };
}

/** A principal on this mesh named by its actor (owner `local`). */
export function localPrincipal(actor: string): Principal {
  return principal(LOCAL_OWNER, actor);
}

/** `<owner>.<actor>`: the id used in envelopes, presence keys and rosters. */
export function principalId(p: Principal): string {
  return `${p.owner}.${p.actor}`;
}

/** `<owner>-<actor>`: the form used inside durable consumer names. */
export function principalDashed(p: Principal): string {
  return `${p.owner}-${p.actor}`;
}

/** Parse `<owner>.<actor>`, or a bare actor name (owner `local`). */
export function parsePrincipal(idOrName: string): Principal {
  const parts = idOrName.split(".");
  if (parts.length === 1) return localPrincipal(parts[0]!);
  if (parts.length === 2) return principal(parts[0]!, parts[1]!);
  throw new InvalidTokenError("principal", idOrName, `<owner>.<actor> with each part of ${ALPHABETS.principal.text}`);
}

/** zod schema for a principal id string `<owner>.<actor>`. */
export const PrincipalId = z
  .string()
  .regex(/^[A-Za-z0-9_]{1,64}\.[A-Za-z0-9_]{1,64}$/, `principal id must be <owner>.<actor>, each of ${ALPHABETS.principal.text}`);

// What a credential file says of itself (principal, profile, space, expiry), read for refusals that
// name it; minting and renewing the mesh host's own credentials is host-credential.ts.
import { readFileSync } from "node:fs";
import { credsClaims, SERVICE_PRINCIPALS } from "../../broker/index.js";
import { principalId } from "../../schemas/index.js";

/** What a command's credential is, as far as the file itself tells (for refusals that name it). */
export interface CredentialScope {
  file: string;
  /** `<owner>.<actor>`, when it is a Cotal credential. */
  principal?: string;
  /** agent, reader, observer, admin, manager, leaf, or `operator` for the mesh host's own CLI credential. */
  profile?: string;
  /** The space it was minted for. */
  space?: string;
  /** Expiry, ms since the epoch. */
  expiresAt?: number;
  /** The user's public key. */
  userPub?: string;
}

/**
 * Read what a `.creds` file says of itself: principal, profile, space and expiry. Credentials
 * minted since #12 carry `cotal-space:`/`cotal-profile:` tags; for older ones the space comes from
 * the subjects it may publish on (every Cotal permission names `cotal.<space>.…`).
 */
export function credentialScope(file: string): CredentialScope | undefined {
  let claims;
  try {
    claims = credsClaims(readFileSync(file));
  } catch {
    return undefined;
  }
  if (!claims) return undefined;
  const tag = (key: string) => claims.tags.find((t) => t.startsWith(`${key}:`))?.slice(key.length + 1);
  const fromSubjects = claims.pubAllow.map((s) => /^cotal\.([A-Za-z0-9_-]+)\./.exec(s)?.[1]).find((s) => s !== undefined);
  const operator = claims.name === principalId(SERVICE_PRINCIPALS.cli);
  const profile = operator ? "operator" : (tag("cotal-profile") ?? profileFromPermissions(claims.pubAllow, claims.subAllow));
  const space = tag("cotal-space") ?? fromSubjects;
  return {
    file,
    ...(claims.name ? { principal: claims.name } : {}),
    ...(profile ? { profile } : {}),
    ...(space ? { space } : {}),
    ...(claims.exp !== undefined ? { expiresAt: claims.exp * 1000 } : {}),
    ...(claims.sub ? { userPub: claims.sub } : {}),
  };
}

/** For credentials minted before they carried tags: the profile their permissions show. */
function profileFromPermissions(pub: string[], sub: string[]): string | undefined {
  if (pub.some((s) => /^cotal\.[^.]+\.ep\.mesh\.one\.join\./.test(s))) return "agent";
  if (sub.some((s) => /^cotal\.[^.]+\.>$/.test(s))) return "admin";
  if (sub.some((s) => /^cotal\.[^.]+\.chat\.>$/.test(s) || /\.chat\.\*\.\*\.>$/.test(s))) return "observer";
  return undefined;
}

/** "the observer credential of local.olga", or "this credential" when the file does not say. */
export function credentialLabel(scope: CredentialScope | undefined): string {
  if (!scope?.principal) return "this credential";
  if (scope.profile === "operator") return "the mesh host's operator credential";
  return `${scope.profile ? `the ${scope.profile} credential` : "the credential"} of ${scope.principal}`;
}

/** The mesh and credential the running command uses, so an error at the edge can name them. */
export interface ActiveTarget {
  space: string;
  creds?: string | undefined;
  /** The mesh host's auth folder, when the command runs there. */
  authDir?: string | undefined;
}
let active: ActiveTarget | undefined;

/** Record the target the command resolved (mesh-target.ts does, once per command). */
export function setActiveTarget(t: ActiveTarget): void {
  active = t;
}

export function activeTarget(): ActiveTarget | undefined {
  return active;
}

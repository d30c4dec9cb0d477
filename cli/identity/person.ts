// The person at the mesh host (.cotal/person.json): who `cotal up` names and keeps a credential
// for; the credential itself is kept by host-credential.ts.
import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { z } from "zod";
import { localPrincipal, principalId, PrincipalToken, SpaceName } from "../../schemas/index.js";
import { credentialScope } from "./credential-scope.js";
import { UsageError } from "../terminal/errors.js";
import { keepHostCredential, type HostCredentialState, type StaticTarget } from "./host-credential.js";
import { defaultActorName } from "./os-user-name.js";
import type { MeshRoot } from "../mesh-host/mesh-root.js";

/**
 * `.cotal/person.json`: the person at the mesh host (docs/security.md, People). Commands that speak
 * or read as someone, run in the mesh folder without --creds, use this person's credential
 * (`.cotal/creds/<name>.creds`, profile `person`); on an open mesh, this name.
 */
export const PersonRecord = z.object({
  name: PrincipalToken,
  /** The space the credential was minted for: other spaces keep the operator's credential. */
  space: SpaceName,
});
export type PersonRecord = z.infer<typeof PersonRecord>;

/** The recorded person, or undefined when none is (a mesh from before people were minted, or one whose record is unreadable). */
export function readPerson(root: MeshRoot): PersonRecord | undefined {
  if (!existsSync(root.personFile)) return undefined;
  try {
    const r = PersonRecord.safeParse(JSON.parse(readFileSync(root.personFile, "utf8")));
    return r.success ? r.data : undefined;
  } catch {
    return undefined;
  }
}

function writePerson(root: MeshRoot, rec: PersonRecord): void {
  const tmp = `${root.personFile}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(PersonRecord.parse(rec), null, 2) + "\n", { mode: 0o600 });
  renameSync(tmp, root.personFile);
}

/**
 * Who `cotal up` mints the person at the mesh host as: `--me`, else the person recorded here, else
 * the OS login name. A login name that cannot be a Cotal name is refused, never rewritten.
 */
export function chooseMe(root: MeshRoot, flag: string | undefined, username?: () => string): string {
  if (flag) return flag;
  const recorded = readPerson(root)?.name;
  if (recorded) return recorded;
  try {
    return defaultActorName(username);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    throw new UsageError(`${err.message} \`cotal up\` names the person at the mesh host after it.`, {
      remedy: "Pass --me <name> with a name of letters, digits and '_' (the name you speak as on this mesh).",
      cause: err,
    });
  }
}

/** What `cotal up` did about the person at the mesh host. */
export interface PersonUp {
  name: string;
  /**
   * `minted`, `reminted`, `kept`: their credential (static meshes); `open`: recorded by name only
   * (an open mesh verifies no names); `conflict`: the credential file holds someone else's, left alone.
   */
  state: HostCredentialState | "open" | "conflict";
  /** Their credential file (static meshes). */
  creds?: string;
}

/**
 * Make `name` the person at the mesh host: on a static mesh their credential, profile `person`,
 * kept in `.cotal/creds/<name>.creds` (0600) as the host manager's is kept (minted once, again when
 * the mesh no longer knows it or its rights changed), with their DM inbox; then the record.
 * A file there that holds another credential (`cotal mint <name> --profile agent` earlier) is left
 * alone and a note says so: the record is not changed.
 */
export async function ensurePerson(
  root: MeshRoot,
  t: { server: string; space: string; creds?: string | undefined },
  name: string,
  notes: string[],
): Promise<PersonUp> {
  if (!t.creds) {
    writePerson(root, { name, space: t.space });
    return { name, state: "open" };
  }
  const file = root.mintedCredsFile(name);
  const scope = existsSync(file) ? credentialScope(file) : undefined;
  const who = principalId(localPrincipal(name));
  if (scope && (scope.profile !== "person" || scope.principal !== who || (scope.space && scope.space !== t.space))) {
    notes.push(
      `${file} holds ${scope.profile ? `the ${scope.profile} credential` : "a credential"} of ${scope.principal ?? "someone"}${scope.space ? ` for space ${scope.space}` : ""}, not ${who}'s as a person: left it alone, and commands here keep the operator's credential (pass --me <another name>, or move the file away and run \`cotal up\` again)`,
    );
    return { name, state: "conflict" };
  }
  const state = await keepHostCredential(
    t as StaticTarget,
    file,
    // The person at the mesh host steers its seats from `cotal web` and may answer every seat's
    // permission asks (docs/security.md, People; The approve right).
    { name, profile: "person", label: `${who}'s credential (the person here)`, provision: true, steer: true, approve: ["*"] },
    notes,
  );
  writePerson(root, { name, space: t.space });
  return { name, state, creds: file };
}

import { existsSync } from "node:fs";
import { resolve } from "node:path";
import type { Logger } from "../../broker/index.js";
import { receiptLine } from "../../connector/index.js";
import { parsePrincipal } from "../../schemas/index.js";
import { PersonWriter, personReads, personRoutes, type WriteMode } from "../../web/index.js";
import type { MeshTarget } from "../mesh-client/mesh-target.js";
import { credentialScope } from "../identity/credential-scope.js";
import { UsageError } from "../terminal/errors.js";
import { localManager } from "../mesh-host/local-manager.js";
import { approvalReads, approvalRoutes } from "./web-approvals.js";
import { findMeshRoot, type MeshRoot } from "../mesh-host/mesh-root.js";
import { readPerson } from "../identity/person.js";
import { credentialSteers, steerReads, steerRoutes, terminalStream, type SteerDeps } from "./web-steer.js";

/** Who `cotal web` writes as: the person's name and credential, or why it writes nothing. */
export type PersonChoice = { name: string; creds?: string } | { why: string };

/** The remedy the page shows when there is no person to write as. */
const HOW = "`cotal up` on the mesh host mints the person there (or pass --as-creds FILE with a person's credential); --read-only hides this note.";

/**
 * The person the dashboard writes as (docs/web.md, Writes): `--as-creds FILE` (a person's
 * credential: never the operator's or the dashboard's admin reader), else the person at the mesh
 * host (`.cotal/person.json`, their credential in `.cotal/creds/<name>.creds`). None: a reason.
 */
export function choosePerson(target: MeshTarget, asCreds: string | undefined): PersonChoice {
  if (asCreds) {
    const file = resolve(asCreds);
    const scope = existsSync(file) ? credentialScope(file) : undefined;
    if (!scope?.principal) throw new UsageError(`Invalid input: --as-creds: ${asCreds} is not a readable credential file.`);
    if (scope.profile !== "person")
      throw new UsageError(
        `Invalid input: --as-creds: ${asCreds} is ${scope.profile ? `a ${scope.profile}` : "a"} credential; the dashboard writes only as a person.`,
        {
          remedy: "Pass a credential from `cotal mint NAME --profile person`, or leave --as-creds out to write as the person at the mesh host.",
        },
      );
    if (scope.space && scope.space !== target.space)
      throw new UsageError(`Invalid input: --as-creds: ${asCreds} is for space ${scope.space}, not ${target.space}.`);
    return { name: parsePrincipal(scope.principal).actor, creds: file };
  }
  const root = meshRootOf(target);
  if (!root) return { why: `no person to write as: this is not a mesh folder. ${HOW}` };
  const person = readPerson(root);
  if (!person) return { why: `no person is recorded for this mesh (.cotal/person.json). ${HOW}` };
  if (person.space !== target.space) return { why: `the person here, ${person.name}, was minted for space ${person.space}, not ${target.space}. ${HOW}` };
  if (root.readInfo()?.mode !== "static") return { name: person.name };
  const file = root.mintedCredsFile(person.name);
  const scope = existsSync(file) ? credentialScope(file) : undefined;
  if (scope?.profile !== "person") return { why: `${person.name}'s person credential is not in ${file}. ${HOW}` };
  return { name: person.name, creds: file };
}

/** The mesh folder: a detached dashboard is started with --server and --space in it, so it is found there (for the same mesh). */
function meshRootOf(target: MeshTarget): MeshRoot | undefined {
  if (target.root) return target.root;
  const found = findMeshRoot();
  const info = found?.readInfo();
  return info?.space === target.space && info.server === target.server ? found : undefined;
}

/** The dashboard's writes, opened: what the server is given, and how to close them. */
export interface OpenWrites {
  mode: WriteMode;
  close(): Promise<void>;
}

/** Connect as the chosen person (undefined: --read-only). A person who cannot connect leaves the dashboard read-only, saying why. */
export async function openWrites(reader: MeshTarget, person: PersonChoice | undefined, log: Logger, managers: () => string[]): Promise<OpenWrites> {
  const none = { close: async () => undefined };
  if (!person) return { ...none, mode: { kind: "read-only" } };
  if ("why" in person) return { ...none, mode: { kind: "off", why: person.why } };
  let writer: PersonWriter;
  try {
    writer = await PersonWriter.open({ server: reader.server, space: reader.space, creds: person.creds, name: person.name, log, receiptLine });
  } catch (err) {
    log.warn({ err }, "the person's connection failed: the dashboard is read-only");
    return { ...none, mode: { kind: "off", why: `${person.name} could not connect (${(err as Error).message}). ${HOW}` } };
  }
  const me = parsePrincipal(writer.as);
  const steer = credentialSteers(person.creds, reader.space, me);
  const root = meshRootOf(reader);
  const d: SteerDeps = {
    nc: writer.nc,
    space: reader.space,
    me,
    managers,
    local: root ? localManager({ root, space: reader.space }) : undefined,
    project: root?.project,
    steer,
    log,
  };
  return {
    mode: {
      kind: "on",
      as: writer.as,
      // A person without the steer right gets the steer routes too: the broker's refusal is what the page shows.
      routes: { ...personRoutes(writer), ...steerRoutes(d), ...approvalRoutes(writer.nc, reader.space, me) },
      reads: { ...personReads(writer), ...steerReads(d), ...approvalReads(writer.nc, reader.space, me) },
      streams: { "/api/terminal": terminalStream(d) },
      steer,
    },
    close: () => writer.close(),
  };
}

import { CotalError, principalId, type Principal } from "../../schemas/index.js";
import type { IdentityRegistry } from "./identity-registry.js";
import { ARTIFACT_READ_COMMANDS, MESH_READ_COMMANDS, READER_MEMBERSHIP_CALLS } from "./permissions.js";

/**
 * The control commands a `reader` may call (docs/security.md, Profiles): the mesh service's reads,
 * the artifact read, and its own durable channel memberships (`join` within its scope, `leave`).
 * The broker allows it no other control subject (permissions.ts); the mesh service holds the same
 * line by the profile it minted the name with, so a permission that was ever too wide still
 * changes nothing.
 */
export const READER_COMMANDS: ReadonlySet<string> = new Set<string>([...MESH_READ_COMMANDS, ...ARTIFACT_READ_COMMANDS, ...READER_MEMBERSHIP_CALLS]);

/** A reader asked for a command that writes or reaches someone. */
export class ReaderCallRefusedError extends CotalError {
  constructor(who: Principal, command: string) {
    super("not-allowed", `${principalId(who)} is a reader: it may not call ${command} (a reader reads its scope and publishes nothing).`, {
      remedy: "A credential that sends, registers or uploads is an agent: `cotal mint <name> --profile agent --allow-publish …`.",
    });
  }
}

/**
 * Refuse `command` to a caller minted as a reader unless it is one of READER_COMMANDS. Names
 * minted with any other profile, and names this mesh never minted, pass: their rights are checked
 * elsewhere (the broker, checkSender, each command's own checks).
 */
export async function checkReaderCall(identities: IdentityRegistry, caller: Principal, command: string): Promise<void> {
  if (READER_COMMANDS.has(command)) return;
  if ((await identities.get(caller))?.profile === "reader") throw new ReaderCallRefusedError(caller, command);
}

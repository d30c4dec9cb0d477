// Which mesh a command talks to, with which credential: the --server/--space/--creds flags, else
// the nearest .cotal/ and its person. The connection a command then opens is session.ts.
import { existsSync, statSync } from "node:fs";
import { resolve } from "node:path";
import { Option, type Command } from "commander";
import { z } from "zod";
import type { NatsConnection } from "@nats-io/transport-node";
import { connectMesh, parseMeshLink, serverUrl, type MeshAddress } from "../../broker/index.js";
import { credentialScope, setActiveTarget } from "../identity/credential-scope.js";
import { MeshNotFoundError, SpaceNotProvisionedError, UsageError, WrongSpaceError } from "../terminal/errors.js";
import { findMeshRoot, type MeshInfo, type MeshRoot } from "../mesh-host/mesh-root.js";
import { readPerson } from "../identity/person.js";
import { parseInput, token } from "../terminal/validate.js";

/** The space `cotal up` provisions when none is named. */
export const DEFAULT_SPACE = "default";

/** Flags every mesh-client command takes (values come from the flag, else the environment). */
export interface MeshFlags {
  server?: string;
  space?: string;
  creds?: string;
}

/** Add `--server`, `--space` and `--creds` (with their environment variables) to a command. */
export function meshOptions(cmd: Command): Command {
  return cmd
    .addOption(new Option("--server <url>", "mesh server: nats://host:port, host:port or cotal://host:port/space").env("COTAL_SERVER"))
    .addOption(new Option("--space <name>", "space to act in").env("COTAL_SPACE"))
    .addOption(credsOption());
}

/** `--creds FILE` / COTAL_CREDS: a NATS credentials file (static-auth meshes). */
export function credsOption(): Option {
  return new Option("--creds <file>", "NATS credentials file (.creds) to connect with").env("COTAL_CREDS");
}

/** Add `--json`. */
export function jsonOption(cmd: Command): Command {
  return cmd.option("--json", "print machine-readable JSON instead of text");
}

/** Where a command acts: a server, a space, credentials, and the mesh root when one was used. */
export interface MeshTarget extends MeshAddress {
  server: string;
  space: string;
  creds?: string | undefined;
  /** The `.cotal/` root the target came from (absent when flags or env named it all). */
  root?: MeshRoot | undefined;
  info?: MeshInfo | undefined;
  /** The person at the mesh host this command speaks or reads as by default (cli/identity/person.ts), when it does. */
  person?: string | undefined;
}

/**
 * A command that speaks or reads as someone (send, listen, inbox, console, history, roster): with
 * no --creds it uses the credential of the person at the mesh host, unless it acts for someone
 * else, which takes the operator's (`--as NAME --impersonate`, or an `--as` that is not them).
 */
export interface Speaker {
  as?: string | undefined;
  impersonate?: boolean | undefined;
}

const FlagsSchema = z.object({
  server: z.string().min(1, "server must not be empty").optional(),
  space: token("space", "space").optional(),
  creds: z.string().min(1, "creds must name a file").optional(),
});

/**
 * Resolve the mesh a command talks to. `--server`/`--space`/`--creds` (or COTAL_SERVER,
 * COTAL_SPACE, COTAL_CREDS) win, each on its own; what they leave open comes from the nearest
 * `.cotal/mesh.json` at or above the working directory.
 */
export function resolveTarget(flags: MeshFlags, cwd: string = process.cwd(), speaker?: Speaker): MeshTarget {
  const f = parseInput(FlagsSchema, { server: flags.server, space: flags.space, creds: flags.creds });
  const creds = f.creds ? checkCreds(f.creds, cwd) : undefined;
  let linkSpace: string | undefined;
  let server: string | undefined;
  if (f.server) {
    try {
      if (f.server.startsWith("cotal://")) linkSpace = parseMeshLink(f.server).space;
      server = serverUrl(f.server);
      // A cluster's nodes come as a comma-separated list: each must be a NATS address.
      for (const one of server.split(",")) {
        const protocol = new URL(one).protocol;
        if (protocol !== "nats:" && protocol !== "tls:") throw new Error(`${protocol}// is not a NATS address`);
      }
    } catch (cause) {
      throw new UsageError(`Invalid input: --server: ${JSON.stringify(f.server)} is not a server address.`, {
        remedy: "Use nats://host:port, host:port or cotal://host:port/space.",
        cause,
      });
    }
  }
  const root = server && (f.space ?? linkSpace) ? undefined : findMeshRoot(cwd);
  const info = root?.readInfo();
  server ??= info?.server;
  if (!server) throw new MeshNotFoundError(cwd);
  const space = f.space ?? linkSpace ?? info?.space ?? DEFAULT_SPACE;
  const person = !creds && speaker ? personOf(root, space, speaker) : undefined;
  const mine = person && info?.mode === "static" ? root!.mintedCredsFile(person) : undefined;
  const used = creds ?? (mine && existsSync(mine) ? mine : defaultCreds(root, info, space));
  setActiveTarget({ space, creds: used, authDir: root && info?.mode === "static" ? root.authDir : undefined });
  // A credential names its space: acting in another is refused here, not after a hang or a raw refusal.
  const scope = used ? credentialScope(used) : undefined;
  if (scope?.space && scope.space !== space) throw new WrongSpaceError(scope, space);
  // On the mesh host of a static mesh every provisioned space has the operator's credential.
  if (!used && root && info?.mode === "static" && !creds) throw new SpaceNotProvisionedError(space, server);
  return { server, space, creds: used, root, info, ...(person ? { person } : {}) };
}

/** The person at the mesh host, when `speaker` speaks as them in `space`: not for someone else, not impersonated. */
function personOf(root: MeshRoot | undefined, space: string, speaker: Speaker): string | undefined {
  const me = root && !speaker.impersonate ? readPerson(root) : undefined;
  return me && me.space === space && (speaker.as === undefined || speaker.as === me.name) ? me.name : undefined;
}

/**
 * The credential a command uses when neither --creds nor COTAL_CREDS names one: on the mesh
 * host of a static mesh, the mesh root's own operator-side credential; open meshes need none.
 */
export function defaultCreds(root: MeshRoot | undefined, info: MeshInfo | undefined, space = info?.space): string | undefined {
  if (!root || info?.mode !== "static" || !space) return undefined;
  const file = root.credsFile(space, "cli");
  return existsSync(file) ? file : undefined;
}

export function checkCreds(file: string, cwd: string): string {
  const path = resolve(cwd, file);
  if (!existsSync(path) || !statSync(path).isFile()) {
    throw new UsageError(`Invalid input: --creds: ${JSON.stringify(file)} is not a file.`, {
      remedy: "Pass the path of a .creds file (or unset COTAL_CREDS).",
    });
  }
  return path;
}

/**
 * Run `fn` on one connection to the mesh with the target's credential, closed after it: for
 * commands that make a few control calls or requests (`mint`, `revoke`, `approvals`, `approve`),
 * not the space's JetStream (which a static mesh keeps in an account clients are not in).
 */
export async function withMeshConnection<T>(target: MeshTarget, name: string, fn: (nc: NatsConnection) => Promise<T>): Promise<T> {
  const nc = await connectMesh({ server: target.server, creds: target.creds, name });
  try {
    return await fn(nc);
  } finally {
    await nc.close().catch(() => undefined);
  }
}

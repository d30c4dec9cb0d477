import { readFileSync, statSync } from "node:fs";
import path from "node:path";
import { z } from "zod";
import { credsClaims, parseMeshLink } from "../broker/index.js";
import { RUNTIME_ENV } from "../runtime/index.js";
import { ChannelName, describeIssues, LaunchMaterial, LOCAL_OWNER, PrincipalToken, RoleName, RuntimeName, SpaceName } from "../schemas/index.js";
import { LaunchError } from "./errors.js";
import { HOW_TO_JOIN } from "./model-text.js";

/** A seat's identity and connection, from either launch form. */
export interface Launch {
  source: "material" | "env";
  server: string;
  space: string;
  owner: string;
  name: string;
  role?: string;
  channels: string[];
  creds?: string;
  uid?: string;
  /** The control token (launch material); hand-started sessions generate one. */
  controlToken?: string;
  controlDir?: string;
  httpPort?: number;
  description?: string;
  tags?: string[];
  meta?: Record<string, string>;
  /** The agent CLI the seat runs (launch material `runtime`, else COTAL_RUNTIME); undefined when neither says. */
  runtime?: string;
  /** Publish nothing on the event plane (launch material `noEvents`, `cotal spawn --no-events`). */
  noEvents?: boolean;
  /** The seat's state dir (the event plane's WAL goes under it): the launch material's folder. */
  stateDir?: string;
  /** The manager instance that runs the seat (launch material `manager`): where cotal_spawn asks. */
  manager?: string;
  /** Who spawned the seat (launch material `spawnedBy`): its owner, who may answer its permission asks. */
  spawnedBy?: string;
  /** supervised: its permission asks go to people over the mesh (launch material `posture`). */
  posture?: "unattended" | "supervised";
  /** How long a permission ask waits for a person, ms (launch material `approvalTimeoutMs`). */
  approvalTimeoutMs?: number;
}

export type LaunchResolution =
  { kind: "none"; /** Why not joined, for the help tool (e.g. COTAL_SERVER set but no COTAL_NAME). */ note?: string } | { kind: "launch"; launch: Launch };

/** Environment variables of the hand-started form. COTAL_NAME selects it. */
export const ENV_LAUNCH_VARS = ["COTAL_SERVER", "COTAL_SPACE", "COTAL_NAME", "COTAL_ROLE", "COTAL_CHANNELS", "COTAL_CREDS"] as const;

/**
 * Decide how this connector joins: from launch material, from the environment (selected by
 * COTAL_NAME, or by COTAL_CREDS naming a minted credential), or not at all. Setting both forms, an unsafe or invalid material file, or an
 * incomplete environment is refused. COTAL_SERVER/COTAL_SPACE alone (as the CLI uses them) do
 * not select the hand-started form: the connector starts not joined and says what is missing.
 */
export function resolveLaunch(env: NodeJS.ProcessEnv = process.env): LaunchResolution {
  const materialPath = env.COTAL_LAUNCH_MATERIAL?.trim();
  const envSet = ENV_LAUNCH_VARS.filter((k) => (env[k] ?? "").trim() !== "");
  if (materialPath && envSet.length) {
    throw new LaunchError(`Both launch forms are set: COTAL_LAUNCH_MATERIAL and ${envSet.join(", ")}.`, {
      remedy: "Use one: launch material (written by the manager or `cotal spawn`) or the COTAL_* variables of a hand-started session, not both.",
    });
  }
  if (materialPath) return { kind: "launch", launch: withRuntime(readLaunchMaterial(materialPath), env) };
  // A minted credential (COTAL_CREDS) names who it is, so it selects the hand-started form too.
  if ((env.COTAL_NAME ?? "").trim() !== "" || credsDefaults(env.COTAL_CREDS?.trim()).COTAL_NAME)
    return { kind: "launch", launch: withRuntime(launchFromEnv(env), env) };
  if (envSet.length)
    return { kind: "none", note: `${envSet.join(", ")} ${envSet.length === 1 ? "is" : "are"} set, but COTAL_NAME is not: the connector needs a name to join.` };
  return { kind: "none" };
}

/**
 * The launch with the agent CLI it runs: the launch material's `runtime`, else COTAL_RUNTIME (set
 * where a setup put the connector into a CLI's configuration). An invalid name is refused.
 */
function withRuntime(launch: Launch, env: NodeJS.ProcessEnv): Launch {
  if (launch.runtime !== undefined) return launch;
  const given = env[RUNTIME_ENV]?.trim();
  if (!given) return launch;
  const parsed = RuntimeName.safeParse(given);
  if (!parsed.success)
    throw new LaunchError(`${RUNTIME_ENV} ${JSON.stringify(given)} is not a runtime name: ${describeIssues(parsed.error).join("; ")}.`, {
      remedy: `Set ${RUNTIME_ENV} to the agent CLI that starts this connector (claude, codex), or leave it unset.`,
    });
  return { ...launch, runtime: parsed.data };
}

/** Read and validate a launch material file; its mode must be 0600 and it must be ours. */
export function readLaunchMaterial(file: string): Launch {
  let st;
  try {
    st = statSync(file);
  } catch (cause) {
    throw new LaunchError(`Cannot read the launch material ${file}: ${(cause as NodeJS.ErrnoException).code ?? String(cause)}.`, {
      remedy: "Check COTAL_LAUNCH_MATERIAL names the file the launcher wrote.",
      cause,
    });
  }
  if (!st.isFile()) throw new LaunchError(`The launch material ${file} is not a regular file.`);
  const mode = st.mode & 0o777;
  if (mode !== 0o600) {
    throw new LaunchError(`The launch material ${file} has mode ${mode.toString(8).padStart(3, "0")}, not 600: it holds a secret, so it must be private.`, {
      remedy: `Run \`chmod 600 ${file}\` (and let only its owner read it).`,
    });
  }
  const uid = process.getuid?.();
  if (uid !== undefined && st.uid !== uid) {
    throw new LaunchError(`The launch material ${file} is owned by uid ${st.uid}, not by this user (${uid}).`);
  }
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(file, "utf8"));
  } catch (cause) {
    throw new LaunchError(`The launch material ${file} is not valid JSON.`, { cause });
  }
  const parsed = LaunchMaterial.safeParse(json);
  if (!parsed.success) throw new LaunchError(`Invalid launch material ${file}: ${describeIssues(parsed.error).join("; ")}.`);
  const m = parsed.data;
  return {
    source: "material",
    server: m.server,
    space: m.space,
    owner: m.owner,
    name: m.name,
    channels: m.channels,
    controlToken: m.controlToken,
    ...(m.role ? { role: m.role } : {}),
    ...(m.creds ? { creds: m.creds } : {}),
    ...(m.uid ? { uid: m.uid } : {}),
    ...(m.controlDir ? { controlDir: m.controlDir } : {}),
    ...(m.httpPort !== undefined ? { httpPort: m.httpPort } : {}),
    ...(m.description ? { description: m.description } : {}),
    ...(m.tags ? { tags: m.tags } : {}),
    ...(m.meta ? { meta: m.meta } : {}),
    ...(m.runtime ? { runtime: m.runtime } : {}),
    ...(m.noEvents ? { noEvents: true } : {}),
    ...(m.manager ? { manager: m.manager } : {}),
    ...(m.spawnedBy ? { spawnedBy: m.spawnedBy } : {}),
    ...(m.posture ? { posture: m.posture } : {}),
    ...(m.approvalTimeoutMs !== undefined ? { approvalTimeoutMs: m.approvalTimeoutMs } : {}),
    stateDir: path.dirname(path.resolve(file)),
  };
}

/**
 * COTAL_NAME, COTAL_SPACE and COTAL_CHANNELS as a minted credential implies them: its principal,
 * its space tag, and the channels it may read (`cotal.<space>.chat.*.*.<channel>` in its
 * subscribe permissions). Nothing for a file that cannot be read or is not a Cotal credential.
 */
export function credsDefaults(creds: string | undefined): Record<string, string> {
  if (!creds) return {};
  let claims;
  try {
    claims = credsClaims(readFileSync(creds));
  } catch {
    return {};
  }
  if (!claims?.name) return {};
  const space = claims.tags.find((t) => t.startsWith("cotal-space:"))?.slice("cotal-space:".length);
  const channels = space
    ? claims.subAllow
        .flatMap((s) => (s.startsWith(`cotal.${space}.chat.*.*.`) ? [s.slice(`cotal.${space}.chat.*.*.`.length)] : []))
        .filter((c) => !c.includes("*") && !c.includes(">"))
    : [];
  return {
    COTAL_NAME: claims.name,
    ...(space ? { COTAL_SPACE: space } : {}),
    ...(channels.length ? { COTAL_CHANNELS: channels.join(",") } : {}),
  };
}

const EnvLaunch = z.object({
  server: z.string().min(1, "COTAL_SERVER is required"),
  space: SpaceName,
  owner: PrincipalToken,
  name: PrincipalToken,
  role: RoleName.optional(),
  channels: z.array(ChannelName).max(64),
  creds: z.string().min(1).optional(),
});

/** The hand-started form: COTAL_SERVER, COTAL_SPACE, COTAL_NAME (+ ROLE, CHANNELS, CREDS). */
export function launchFromEnv(env: NodeJS.ProcessEnv): Launch {
  const given = (k: string) => {
    const v = env[k]?.trim();
    return v ? v : undefined;
  };
  // A minted credential names its principal, space and readable channels: what is not set comes from it.
  const fromCreds = credsDefaults(given("COTAL_CREDS"));
  const get = (k: string) => given(k) ?? fromCreds[k];
  let server = get("COTAL_SERVER");
  let space = get("COTAL_SPACE");
  if (server?.startsWith("cotal://")) {
    try {
      const link = parseMeshLink(server);
      space ??= link.space;
      server = link.server;
    } catch (cause) {
      throw new LaunchError(`COTAL_SERVER ${JSON.stringify(server)} is not a valid cotal:// link.`, { cause });
    }
  }
  const missing = [!server && "COTAL_SERVER", !space && "COTAL_SPACE", !get("COTAL_NAME") && "COTAL_NAME"].filter(Boolean);
  if (missing.length) {
    throw new LaunchError(`Incomplete hand-started launch: ${missing.join(", ")} ${missing.length === 1 ? "is" : "are"} not set.`, { remedy: HOW_TO_JOIN });
  }
  const rawName = get("COTAL_NAME")!;
  const dotted = rawName.split(".");
  // `<owner>.<actor>` or a bare actor; anything else is left whole so validation refuses it.
  const [owner, name] = dotted.length === 2 ? [dotted[0]!, dotted[1]!] : [LOCAL_OWNER, rawName];
  const channels = (get("COTAL_CHANNELS") ?? "").split(/[\s,]+/).filter((c) => c !== "");
  const parsed = EnvLaunch.safeParse({
    server,
    space,
    owner,
    name,
    role: get("COTAL_ROLE"),
    channels,
    creds: get("COTAL_CREDS"),
  });
  if (!parsed.success) {
    throw new LaunchError(`Invalid hand-started launch: ${describeIssues(parsed.error).join("; ")}.`, {
      remedy: "COTAL_NAME is an actor name (letters, digits, '_') or <owner>.<actor>; COTAL_CHANNELS a comma-separated list of channels.",
    });
  }
  const e = parsed.data;
  return {
    source: "env",
    server: e.server,
    space: e.space,
    owner: e.owner,
    name: e.name,
    channels: e.channels,
    ...(e.role ? { role: e.role } : {}),
    ...(e.creds ? { creds: e.creds } : {}),
  };
}

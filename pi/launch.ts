// The one place a pi command line is built (docs/runtimes.md): a headless run (`pi -p --mode
// json`, the prompt on stdin) and an interactive seat (`pi`, its TUI, under the manager's
// terminal). Both load Cotal's extension (`-e`, extension.ts) and get a private agent folder
// (PI_CODING_AGENT_DIR): copies of the user's models.json, settings.json (Cotal's own extension
// entry taken out: `-e` loads it) and login (auth.json), all 0600, their extensions folder named in
// the settings so pi still loads it, the persona after their APPEND_SYSTEM.md. The user's own
// folder is read, never written. PI_OFFLINE: a managed pi never downloads or updates anything.
import { readFileSync } from "node:fs";
import path from "node:path";
import {
  allowListedEnv,
  readJsonObjectFile,
  privateLaunchDir,
  spawnWithPrivateDir,
  writePrivateFiles,
  type LaunchCommon,
  type LaunchedRuntime,
  type LaunchFile,
  type PrivateDirRules,
  type RunLaunchInput,
  type RuntimeHost,
  type RuntimeLaunch,
  type SeatLaunchInput,
  type SpawnOptions,
} from "../runtime/index.js";
import { piLaunchError } from "./errors.js";
import { MODE_ENV } from "./extension-env.js";
import { PI_KEY_VARS, PI_SWITCHES, readUserPiConfig } from "./home.js";
import { POSTURE_ENV, POSTURE_NAME, postureOf, PostureRuleError } from "./posture.js";

/** Private pi folders are named so; nothing else is ever removed. */
export const PI_DIR_PREFIX = "cotal-pi-";

/** Cotal's pi extension bundle beside the connector's MCP entry (it ships in the plugin's bin/). */
export const extensionEntryOf = (connectorEntry: string): string => path.join(path.dirname(connectorEntry), "pi-extension.mjs");

/** Whether a settings.json `extensions` entry is Cotal's extension (any version or place of it). */
export const isCotalExtension = (entry: unknown): boolean => typeof entry === "string" && entry.endsWith("/pi-extension.mjs");

const json = (o: unknown): string => `${JSON.stringify(o, null, 2)}\n`;

function refuseUnsupported(c: LaunchCommon): void {
  if (c.agent !== undefined)
    throw piLaunchError(`The agent file names a subagent (${JSON.stringify(c.agent)}); pi has none, a pi launch runs as its one agent.`, {
      remedy: "Drop `agent:` from an agent file with `runtime: pi`.",
    });
  for (const [k, v] of Object.entries(c.launchOptions))
    throw piLaunchError(`Launch option ${JSON.stringify(k)}=${JSON.stringify(v)} is not one Cotal passes to pi.`, {
      remedy: "For runtime pi there are no launch options: the posture is Cotal's extension (allowedTools) and the deny floor.",
    });
}

/** The private agent folder's files from the user's own, and the launch's environment. */
function home(host: RuntimeHost, c: LaunchCommon, mode: "run" | "seat", set: Record<string, string> = {}) {
  refuseUnsupported(c);
  let posture;
  try {
    posture = postureOf(c.allowedTools);
  } catch (err) {
    if (err instanceof PostureRuleError)
      throw piLaunchError(err.message, { remedy: "Name pi's tools (or mcp__cotal) in allowedTools for a `runtime: pi` agent." });
    throw err;
  }
  const privateDir = privateLaunchDir(c, PI_DIR_PREFIX, (m) => piLaunchError(m));
  const user = readUserPiConfig(host.parentEnv);
  if (user.unreadable)
    throw piLaunchError(`The user's pi configuration cannot be read (${user.unreadable}); nothing was started.`, {
      remedy: `Fix the file (pi reads plain JSON) in ${user.dir}.`,
    });
  const agent = path.join(privateDir, "agent");
  const file = (name: string, content: string): LaunchFile => ({ path: path.join(agent, name), mode: 0o600, content });
  const files: LaunchFile[] = [];
  if (user.models) files.push(file("models.json", readFileSync(user.models, "utf8")));
  if (user.login) files.push(file("auth.json", readFileSync(user.login, "utf8")));
  const settings = user.settings ? (readJsonObjectFile(user.settings) as { doc: Record<string, unknown> }).doc : {};
  const extensions = [
    ...(Array.isArray(settings.extensions) ? settings.extensions : []).filter((e) => !isCotalExtension(e)),
    ...(user.extensions ? [user.extensions] : []),
  ];
  files.push(file("settings.json", json({ ...settings, ...(extensions.length ? { extensions } : {}) })));
  const persona = c.persona !== undefined && c.persona.trim() !== "" ? c.persona : undefined;
  const append = [user.appendSystem ? readFileSync(user.appendSystem, "utf8") : undefined, persona].filter((s): s is string => s !== undefined);
  if (append.length) files.push(file("APPEND_SYSTEM.md", `${append.join("\n\n")}\n`));
  const env = {
    ...allowListedEnv(host.parentEnv, [...PI_KEY_VARS, ...PI_SWITCHES, ...user.envKeys]),
    ...set,
    PI_CODING_AGENT_DIR: agent,
    PI_OFFLINE: "1",
    [POSTURE_ENV]: JSON.stringify(posture),
    [MODE_ENV]: mode,
  };
  return { privateDir, files, env };
}

const launchArgs = (host: RuntimeHost, model: string | undefined): string[] => [
  "-e",
  extensionEntryOf(host.connectorEntry),
  ...(model ? ["--model", model] : []),
];

/** A headless run: `pi -p --mode json` with Cotal's extension (the posture), the prompt on stdin (never argv). */
export function buildPiRun(host: RuntimeHost, input: RunLaunchInput): RuntimeLaunch {
  const { privateDir, files, env } = home(host, { ...input, name: `run_${input.runId}` }, "run");
  return {
    command: host.executable,
    args: [...launchArgs(host, input.model), "-p", "--mode", "json"],
    env,
    cwd: input.cwd,
    privateDir,
    files,
    // pi reads piped stdin into its prompt in print mode.
    stdin: input.prompt,
    permissionMode: POSTURE_NAME,
  };
}

/**
 * An interactive seat: the pi TUI with Cotal's extension, which starts the connector (its tools
 * become pi's), relays pi's events as the connector's hooks and holds the posture.
 */
export async function buildPiSeat(host: RuntimeHost, seat: SeatLaunchInput): Promise<RuntimeLaunch> {
  const { privateDir, files, env } = home(host, { ...seat, runtimeDir: seat.seatDir }, "seat", { COTAL_LAUNCH_MATERIAL: seat.launchMaterialPath });
  return { command: host.executable, args: launchArgs(host, seat.model), env, cwd: seat.cwd, privateDir, files, permissionMode: POSTURE_NAME };
}

const RULES: PrivateDirRules = { prefix: PI_DIR_PREFIX, fail: (message, cause) => piLaunchError(message, { cause }) };

/** Create the private folder (0700, must not exist) and write its files (0600, exclusive). */
export function writePiLaunchFiles(launch: Pick<RuntimeLaunch, "privateDir" | "files">): void {
  writePrivateFiles(launch, RULES);
}

/** Write the folder, spawn, hand over the prompt; the folder goes when the process does. */
export function spawnPi(launch: RuntimeLaunch, opts: SpawnOptions): LaunchedRuntime {
  return spawnWithPrivateDir(launch, opts, RULES);
}

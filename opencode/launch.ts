// The one place an OpenCode command line is built (docs/runtimes.md): a headless run (`opencode
// run --format json`, the prompt on stdin) and an interactive seat (`opencode`, its TUI, under the
// manager's terminal). Both get a private home: XDG_CONFIG_HOME holds Cotal's layer (opencode.json:
// the `cotal` agent and its posture, posture.ts; for a seat the connector as MCP server and Cotal's
// plugin, plugin.ts), applied first and, as OPENCODE_CONFIG_DIR, again after the project's; the
// user's own config file is read as it is through OPENCODE_CONFIG (their provider, base URL, model);
// XDG_DATA_HOME holds a copy of their login (auth.json, 0600) and the launch's sessions. Never `--auto`.
import { readFileSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import {
  allowListedEnv,
  connectorCommand,
  hookEntryOf,
  privateLaunchDir,
  spawnWithPrivateDir,
  writePrivateFiles,
  type Env,
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
import { opencodeLaunchError } from "./errors.js";
import { PROVIDER_KEY_VARS, readUserOpencodeConfig } from "./home.js";
import { COTAL_AGENT, MCP_NAME, POSTURE_NAME, postureRules, SUBAGENTS } from "./posture.js";

/** Private OpenCode homes are named so; nothing else is ever removed. */
export const OPENCODE_DIR_PREFIX = "cotal-opencode-";
/** The version of OpenCode's plugin SDK the pinned CLI installs into each config folder. */
const PLUGIN_SDK = { name: "@opencode-ai/plugin", version: "1.18.33" };

const json = (o: unknown): string => `${JSON.stringify(o, null, 2)}\n`;

/**
 * The files that make an OpenCode config folder read as having its plugin SDK installed. OpenCode
 * installs the SDK from the npm registry into every config folder it reads, and waits for it before
 * it loads a plugin; it skips that when node_modules exists and the lockfile names the SDK.
 */
export function pluginSdkInstalledFiles(configDir: string): LaunchFile[] {
  const dependencies = { [PLUGIN_SDK.name]: PLUGIN_SDK.version };
  return [
    { path: path.join(configDir, "package.json"), mode: 0o600, content: json({ dependencies }) },
    { path: path.join(configDir, "package-lock.json"), mode: 0o600, content: json({ lockfileVersion: 3, packages: { "": { dependencies } } }) },
    { path: path.join(configDir, "node_modules", ".cotal"), mode: 0o600, content: "" },
  ];
}

/** OpenCode's own switches a user may have set for every launch (no model fetch offline, …). */
const SWITCHES = ["OPENCODE_DISABLE_MODELS_FETCH", "OPENCODE_MODELS_PATH", "OPENCODE_MODELS_URL", "OPENCODE_DISABLE_LSP_DOWNLOAD"] as const;

/** The environment a launch gets: an allow-list of the launcher's, the user's provider keys, the private home on top. */
export function buildOpencodeEnv(parentEnv: Env, envKeys: readonly string[], set: Readonly<Record<string, string>>): Record<string, string> {
  return { ...allowListedEnv(parentEnv, [...SWITCHES, ...PROVIDER_KEY_VARS, ...envKeys]), ...set, OPENCODE_DISABLE_AUTOUPDATE: "1" };
}

function refuseUnsupported(c: LaunchCommon): void {
  if (c.agent !== undefined)
    throw opencodeLaunchError(`The agent file names a subagent (${JSON.stringify(c.agent)}); an OpenCode launch runs as Cotal's own agent.`, {
      remedy: "Drop `agent:` from an agent file with `runtime: opencode`.",
    });
  for (const [k, v] of Object.entries(c.launchOptions))
    throw opencodeLaunchError(`Launch option ${JSON.stringify(k)}=${JSON.stringify(v)} is not one Cotal passes to OpenCode.`, {
      remedy: "For runtime opencode there are no launch options: the posture is OpenCode's permission rules (allowedTools) and the deny floor.",
    });
  if (c.model !== undefined && !/^[^/\s]+\/\S+$/.test(c.model))
    throw opencodeLaunchError(`The model ${JSON.stringify(c.model)} does not name its provider; OpenCode models are \`provider/model\`.`, {
      remedy: "Name the model as OpenCode lists it (`opencode models`), e.g. anthropic/claude-sonnet-4-5.",
    });
}

/** Cotal's plugin bundle beside the connector's MCP entry (it ships in the plugin's bin/). */
export const pluginEntryOf = (connectorEntry: string): string => path.join(path.dirname(connectorEntry), "opencode-plugin.mjs");

/** Cotal's MCP server in OpenCode's config: the connector, started by OpenCode over stdio. */
export function mcpEntry(connectorEntry: string, environment: Record<string, string>): Record<string, unknown> {
  const c = connectorCommand(connectorEntry);
  return { type: "local", command: [c.command, ...c.args], environment, enabled: true };
}

/** Cotal's plugin in OpenCode's config, with what it needs to run the connector's hook command; `unattended`: it refuses what would ask a person. */
export function pluginEntry(connectorEntry: string, unattended: boolean): [string, Record<string, unknown>] {
  return [
    pathToFileURL(pluginEntryOf(connectorEntry)).href,
    { node: process.execPath, hook: hookEntryOf(connectorEntry), ...(unattended ? { unattended: true } : {}) },
  ];
}

/** Whether a config `plugin` entry is Cotal's (any version or place of it). */
export const isCotalPlugin = (entry: unknown): boolean => (Array.isArray(entry) ? entry[0] : entry)?.toString().endsWith("/opencode-plugin.mjs") === true;

/** The files of a private home, and the launch's environment. */
function home(host: RuntimeHost, c: LaunchCommon, extra: { mcp?: Record<string, unknown>; plugin?: unknown; set?: Record<string, string> }) {
  refuseUnsupported(c);
  const privateDir = privateLaunchDir(c, OPENCODE_DIR_PREFIX, (m) => opencodeLaunchError(m));
  const user = readUserOpencodeConfig(host.parentEnv);
  const configDir = path.join(privateDir, "opencode");
  const dataDir = path.join(privateDir, "data");
  const rules = postureRules(c.allowedTools, user.asks);
  const persona = c.persona !== undefined && c.persona.trim() !== "" ? path.join(privateDir, "persona.md") : undefined;
  const layer = {
    $schema: "https://opencode.ai/config.json",
    autoupdate: false,
    share: "disabled",
    default_agent: COTAL_AGENT,
    ...(persona ? { instructions: [persona] } : {}),
    ...(extra.plugin ? { plugin: [extra.plugin] } : {}),
    ...(extra.mcp ? { mcp: { [MCP_NAME]: extra.mcp } } : {}),
    agent: {
      [COTAL_AGENT]: {
        mode: "primary",
        description: "Cotal's unattended agent: OpenCode's tools, the asks refused, the deny floor.",
        ...(c.model ? { model: c.model } : {}),
        permission: rules,
      },
      ...Object.fromEntries(SUBAGENTS.map((a) => [a, { permission: rules }])),
    },
  };
  const files: LaunchFile[] = [{ path: path.join(configDir, "opencode.json"), mode: 0o600, content: json(layer) }, ...pluginSdkInstalledFiles(configDir)];
  if (persona) files.push({ path: persona, mode: 0o600, content: c.persona! });
  if (user.login) files.push({ path: path.join(dataDir, "opencode", "auth.json"), mode: 0o600, content: readFileSync(user.login, "utf8") });
  const env = buildOpencodeEnv(host.parentEnv, user.envKeys, {
    ...extra.set,
    XDG_CONFIG_HOME: privateDir,
    OPENCODE_CONFIG_DIR: configDir,
    XDG_DATA_HOME: dataDir,
    XDG_STATE_HOME: path.join(privateDir, "state"),
    ...(user.config ? { OPENCODE_CONFIG: user.config } : {}),
  });
  return { privateDir, files, env };
}

/** A headless run: `opencode run --format json`, the prompt on stdin. (A JSON schema is refused before this, by the kernel: `opencode run` has no way to hold its answer to one.) */
export function buildOpencodeRun(host: RuntimeHost, input: RunLaunchInput): RuntimeLaunch {
  const c = { ...input, name: `run_${input.runId}` };
  const { privateDir, files, env } = home(host, c, {});
  return {
    command: host.executable,
    args: ["run", "--format", "json", "--agent", COTAL_AGENT, ...(input.model ? ["--model", input.model] : [])],
    env,
    cwd: input.cwd,
    privateDir,
    files,
    // `opencode run` reads the message from stdin when it is not a terminal: never argv.
    stdin: input.prompt,
    permissionMode: POSTURE_NAME,
  };
}

/**
 * An interactive seat: the OpenCode TUI with the connector as MCP server (joining when OpenCode
 * starts it: OpenCode creates a session only with the first prompt) and Cotal's plugin, which
 * relays OpenCode's hooks to the connector and refuses what would ask a person.
 */
export async function buildOpencodeSeat(host: RuntimeHost, seat: SeatLaunchInput): Promise<RuntimeLaunch> {
  const material = { COTAL_LAUNCH_MATERIAL: seat.launchMaterialPath };
  const { privateDir, files, env } = home(
    host,
    { ...seat, runtimeDir: seat.seatDir },
    {
      mcp: mcpEntry(host.connectorEntry, { ...material, COTAL_JOIN_ON: "start" }),
      plugin: pluginEntry(host.connectorEntry, true),
      set: material,
    },
  );
  return { command: host.executable, args: [seat.cwd], env, cwd: seat.cwd, privateDir, files, permissionMode: POSTURE_NAME };
}

const RULES: PrivateDirRules = { prefix: OPENCODE_DIR_PREFIX, fail: (message, cause) => opencodeLaunchError(message, { cause }) };

/** Create the private home (0700, must not exist) and write its files (0600, exclusive). */
export function writeOpencodeLaunchFiles(launch: Pick<RuntimeLaunch, "privateDir" | "files">): void {
  writePrivateFiles(launch, RULES);
}

/** Write the home, spawn, hand over the prompt; the home goes when the process does. */
export function spawnOpencode(launch: RuntimeLaunch, opts: SpawnOptions): LaunchedRuntime {
  return spawnWithPrivateDir(launch, opts, RULES);
}

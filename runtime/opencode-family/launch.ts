// The one place an OpenCode-family command line is built (docs/runtimes.md): a headless run (`<cli>
// run --format json`, the prompt on stdin) and an interactive seat (`<cli>`, its TUI, under the
// manager's terminal). Both get a private home: XDG_CONFIG_HOME is the private directory, and
// Cotal's layer (`<app>.json`: the `cotal` agent and its posture, posture.ts; for a seat the
// connector as MCP server and Cotal's plugin, plugin.ts) is read as `$<CONFIG_DIR>`, after the
// project's config; XDG_DATA_HOME holds a copy of the user's login (auth.json, 0600) and the
// launch's sessions. The user's own config files (their provider, base URL, model) are read where
// they are through `$<CONFIG>` (OpenCode), or, for a CLI that writes into the config files it
// reads (Kilo Code adds `$schema`), as copies: their global files in the private global folder,
// the file `$<CONFIG>` names as a copy named by it again. Never `--auto`.
import { readFileSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import type { Env, LaunchedRuntime, LaunchFile, RunLaunchInput, RuntimeHost, RuntimeLaunch, SeatLaunchInput, SpawnOptions } from "../adapter.js";
import { connectorCommand, hookEntryOf } from "../connector-entry.js";
import type { LaunchCommon } from "../launch-common.js";
import { privateLaunchDir } from "../launch-dir.js";
import { allowListedEnv } from "../launch-env.js";
import { writePrivateFiles, type PrivateDirRules } from "../private-files.js";
import { spawnWithPrivateDir } from "../spawn-launch.js";
import type { OpencodeFamily } from "./family.js";
import { COTAL_AGENT, MCP_NAME, POSTURE_NAME, postureRules, SUBAGENTS } from "./posture.js";
import { readUserOpencodeConfig, type UserOpencodeConfig } from "./user-config.js";

const json = (o: unknown): string => `${JSON.stringify(o, null, 2)}\n`;

/** Private homes of `d` are named so; nothing else is ever removed. */
export const privateDirPrefix = (d: OpencodeFamily): string => `cotal-${d.app}-`;

/**
 * The files that make a config folder read as having the CLI's plugin SDK installed. The CLI
 * installs the SDK from the npm registry into every config folder naming a plugin (OpenCode waits
 * for it before it loads a plugin); it skips that when node_modules exists and the lockfile names
 * the SDK.
 */
export function pluginSdkInstalledFiles(configDir: string, sdk: OpencodeFamily["pluginSdk"]): LaunchFile[] {
  const dependencies = { [sdk.name]: sdk.version };
  return [
    { path: path.join(configDir, "package.json"), mode: 0o600, content: json({ dependencies }) },
    { path: path.join(configDir, "package-lock.json"), mode: 0o600, content: json({ lockfileVersion: 3, packages: { "": { dependencies } } }) },
    { path: path.join(configDir, "node_modules", ".cotal"), mode: 0o600, content: "" },
  ];
}

/** The environment a launch gets: an allow-list of the launcher's, the user's provider keys, the private home on top. */
export function buildLaunchEnv(d: OpencodeFamily, parentEnv: Env, envKeys: readonly string[], set: Readonly<Record<string, string>>): Record<string, string> {
  return { ...allowListedEnv(parentEnv, [...d.switches, ...d.providerKeyVars, ...envKeys]), ...set, [d.env.disableAutoupdate]: "1" };
}

function refuseUnsupported(d: OpencodeFamily, c: LaunchCommon): void {
  if (c.agent !== undefined)
    throw d.fail(`The agent file names a subagent (${JSON.stringify(c.agent)}); Cotal's ${d.label} launches run as Cotal's own agent.`, {
      remedy: `Drop \`agent:\` from an agent file with \`runtime: ${d.runtime}\`.`,
    });
  for (const [k, v] of Object.entries(c.launchOptions))
    throw d.fail(`Launch option ${JSON.stringify(k)}=${JSON.stringify(v)} is not one Cotal passes to ${d.label}.`, {
      remedy: `For runtime ${d.runtime} there are no launch options: the posture is ${d.label}'s permission rules (allowedTools) and the deny floor.`,
    });
  if (c.model !== undefined && !/^[^/\s]+\/\S+$/.test(c.model))
    throw d.fail(`The model ${JSON.stringify(c.model)} does not name its provider; ${d.label} models are \`provider/model\`.`, {
      remedy: `Name the model as ${d.label} lists it (\`${d.command} models\`), e.g. anthropic/claude-sonnet-4-5.`,
    });
}

/** Cotal's plugin bundle for `d` beside the connector's MCP entry (it ships in the plugin's bin/). */
export const pluginEntryOf = (d: OpencodeFamily, connectorEntry: string): string => path.join(path.dirname(connectorEntry), d.pluginBundle);

/** Cotal's MCP server in the family's config: the connector, started by the CLI over stdio. */
export function mcpEntry(connectorEntry: string, environment: Record<string, string>): Record<string, unknown> {
  const c = connectorCommand(connectorEntry);
  return { type: "local", command: [c.command, ...c.args], environment, enabled: true };
}

/** Cotal's plugin in the config of `d`, with what it needs to run the connector's hook command; `unattended`: it refuses what would ask a person. */
export function pluginEntry(d: OpencodeFamily, connectorEntry: string, unattended: boolean): [string, Record<string, unknown>] {
  return [
    pathToFileURL(pluginEntryOf(d, connectorEntry)).href,
    { node: process.execPath, hook: hookEntryOf(connectorEntry), ...(unattended ? { unattended: true } : {}) },
  ];
}

/** Whether a config `plugin` entry is Cotal's plugin for `d` (any version or place of it). */
export const isCotalPlugin = (d: OpencodeFamily, entry: unknown): boolean =>
  (Array.isArray(entry) ? entry[0] : entry)?.toString().endsWith(`/${d.pluginBundle}`) === true;

/** How the user's config files reach the launch: the variable naming one where it is, or copies. */
function userLayer(d: OpencodeFamily, user: UserOpencodeConfig, privateDir: string): { files: LaunchFile[]; set: Record<string, string> } {
  if (d.userConfig === "in-place") {
    const file = user.named ?? user.files[0];
    return { files: [], set: file ? { [d.env.config]: file } : {} };
  }
  const globalDir = path.join(privateDir, d.app);
  const copy = (from: string, to: string): LaunchFile => ({ path: to, mode: 0o600, content: readFileSync(from, "utf8") });
  const files = [
    ...user.files.map((f) => copy(f, path.join(globalDir, path.basename(f)))),
    ...d.seeds.map((s) => ({ path: path.join(globalDir, s), mode: 0o600, content: "" })),
  ];
  if (!user.named) return { files, set: {} };
  const named = path.join(privateDir, "named", path.basename(user.named));
  return { files: [...files, copy(user.named, named)], set: { [d.env.config]: named } };
}

/** The files of a private home, and the launch's environment. */
function home(d: OpencodeFamily, host: RuntimeHost, c: LaunchCommon, extra: { mcp?: Record<string, unknown>; plugin?: unknown; set?: Record<string, string> }) {
  refuseUnsupported(d, c);
  const privateDir = privateLaunchDir(c, privateDirPrefix(d), (m) => d.fail(m));
  const user = readUserOpencodeConfig(d, host.parentEnv);
  // Named in place, the private global folder is Cotal's layer too (read first, and again last);
  // copied, it holds the user's files, and Cotal's layer a folder of its own.
  const layerDir = path.join(privateDir, d.userConfig === "in-place" ? d.app : "cotal");
  const dataDir = path.join(privateDir, "data");
  const rules = postureRules(d, c.allowedTools, user.asks);
  const persona = c.persona !== undefined && c.persona.trim() !== "" ? path.join(privateDir, "persona.md") : undefined;
  const layer = {
    $schema: d.schema,
    autoupdate: false,
    share: "disabled",
    ...d.layer,
    default_agent: COTAL_AGENT,
    ...(persona ? { instructions: [persona] } : {}),
    ...(extra.plugin ? { plugin: [extra.plugin] } : {}),
    ...(extra.mcp ? { mcp: { [MCP_NAME]: extra.mcp } } : {}),
    agent: {
      [COTAL_AGENT]: {
        mode: "primary",
        description: `Cotal's unattended agent: ${d.label}'s tools, the asks refused, the deny floor.`,
        ...(c.model ? { model: c.model } : {}),
        permission: rules,
      },
      ...Object.fromEntries(SUBAGENTS.map((a) => [a, { permission: rules }])),
    },
  };
  const users = userLayer(d, user, privateDir);
  const files: LaunchFile[] = [
    { path: path.join(layerDir, `${d.app}.json`), mode: 0o600, content: json(layer) },
    ...pluginSdkInstalledFiles(layerDir, d.pluginSdk),
    ...users.files,
  ];
  if (persona) files.push({ path: persona, mode: 0o600, content: c.persona! });
  if (user.login) files.push({ path: path.join(dataDir, d.app, "auth.json"), mode: 0o600, content: readFileSync(user.login, "utf8") });
  const env = buildLaunchEnv(d, host.parentEnv, user.envKeys, {
    ...extra.set,
    XDG_CONFIG_HOME: privateDir,
    [d.env.configDir]: layerDir,
    XDG_DATA_HOME: dataDir,
    XDG_STATE_HOME: path.join(privateDir, "state"),
    ...users.set,
  });
  return { privateDir, files, env };
}

/** A headless run: `<cli> run --format json`, the prompt on stdin. (A JSON schema is refused before this, by the kernel: the family's run has no way to hold its answer to one.) */
export function buildRun(d: OpencodeFamily, host: RuntimeHost, input: RunLaunchInput): RuntimeLaunch {
  const c = { ...input, name: `run_${input.runId}` };
  const { privateDir, files, env } = home(d, host, c, {});
  return {
    command: host.executable,
    args: ["run", "--format", "json", "--agent", COTAL_AGENT, ...(input.model ? ["--model", input.model] : [])],
    env,
    cwd: input.cwd,
    privateDir,
    files,
    // `<cli> run` reads the message from stdin when it is not a terminal: never argv.
    stdin: input.prompt,
    permissionMode: POSTURE_NAME,
  };
}

/**
 * An interactive seat: the CLI's TUI with the connector as MCP server (joining when the CLI starts
 * it: the family creates a session only with the first prompt) and Cotal's plugin, which relays the
 * CLI's hooks to the connector and refuses what would ask a person.
 */
export async function buildSeat(d: OpencodeFamily, host: RuntimeHost, seat: SeatLaunchInput): Promise<RuntimeLaunch> {
  const material = { COTAL_LAUNCH_MATERIAL: seat.launchMaterialPath };
  const { privateDir, files, env } = home(
    d,
    host,
    { ...seat, runtimeDir: seat.seatDir },
    {
      mcp: mcpEntry(host.connectorEntry, { ...material, COTAL_JOIN_ON: "start" }),
      plugin: pluginEntry(d, host.connectorEntry, true),
      set: material,
    },
  );
  return { command: host.executable, args: [seat.cwd], env, cwd: seat.cwd, privateDir, files, permissionMode: POSTURE_NAME };
}

const rulesOf = (d: OpencodeFamily): PrivateDirRules => ({ prefix: privateDirPrefix(d), fail: (message, cause) => d.fail(message, { cause }) });

/** Create the private home (0700, must not exist) and write its files (0600, exclusive). */
export function writeLaunchFiles(d: OpencodeFamily, launch: Pick<RuntimeLaunch, "privateDir" | "files">): void {
  writePrivateFiles(launch, rulesOf(d));
}

/** Write the home, spawn, hand over the prompt; the home goes when the process does. */
export function spawnLaunch(d: OpencodeFamily, launch: RuntimeLaunch, opts: SpawnOptions): LaunchedRuntime {
  return spawnWithPrivateDir(launch, opts, rulesOf(d));
}

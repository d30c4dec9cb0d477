// The one place a Gemini CLI command line is built (docs/runtimes.md): a headless run (`gemini
// --output-format json`, the prompt on stdin) and an interactive seat (`gemini`, its TUI, under the
// manager's terminal). Both get a private home (GEMINI_CLI_HOME → `<dir>/.gemini`): settings.json
// with the user's auth type and model carried, updates and usage statistics off, the folder
// trusted (GEMINI_CLI_TRUST_WORKSPACE), for a seat Cotal's MCP server and the connector's hooks;
// the posture as a user-tier policy (posture.ts); the persona as the global context file
// (GEMINI.md, after the user's own); the user's Google login copied 0600. Never `--yolo`.
import { readFileSync } from "node:fs";
import path from "node:path";
import {
  allowListedEnv,
  connectorCommand,
  hookEntryOf,
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
import { geminiLaunchError } from "./errors.js";
import { effectiveAuthType, GEMINI_KEY_VARS, readUserGeminiConfig } from "./home.js";
import { MCP_NAME, POSTURE_NAME, postureRules, renderPolicy } from "./posture.js";

/** The runtime's name (agent files, `--agent`, the card's `runtime`). */
export const GEMINI_RUNTIME_NAME = "gemini";
/** Private Gemini homes are named so; nothing else is ever removed. */
export const GEMINI_DIR_PREFIX = "cotal-gemini-";

/**
 * A Gemini hook event → the connector's hook event it stands for, its timeout (Gemini's, in ms) and
 * what it does. Gemini 0.61.0 sends Claude-shaped payloads (session_id, transcript_path, cwd,
 * prompt, tool_name, tool_input) and reads `hookSpecificOutput.additionalContext` from any event.
 */
export const GEMINI_HOOKS: ReadonlyArray<{ gemini: string; connector: string; timeoutMs: number }> = [
  // At the TUI's start (and a run's): presence idle, the identity and waiting mail into context.
  { gemini: "SessionStart", connector: "SessionStart", timeoutMs: 15_000 },
  // Before each prompt goes to the model: presence working; waiting mail appended to the prompt.
  { gemini: "BeforeAgent", connector: "UserPromptSubmit", timeoutMs: 15_000 },
  // Before every tool: presence working with the tool's name.
  { gemini: "BeforeTool", connector: "PreToolUse", timeoutMs: 5_000 },
  // A tool waits for a person's approval (notification_type ToolPermission): presence waiting, approval.
  { gemini: "Notification", connector: "PermissionRequest", timeoutMs: 5_000 },
  // The turn is done: presence idle (and a wake for mail that came during it).
  { gemini: "AfterAgent", connector: "Stop", timeoutMs: 5_000 },
  { gemini: "SessionEnd", connector: "SessionEnd", timeoutMs: 5_000 },
];

/** What marks a hook command as Cotal's (any version or place of it). */
export const COTAL_HOOK_MARK = "hook.mjs";

type HookGroups = Record<string, Array<{ matcher?: string; hooks: Array<{ type: "command"; name: string; command: string; timeout: number }> }>>;

/** Cotal's hooks in settings.json's `hooks`: every event runs the connector's hook command (`node hook.mjs <event>`). */
export function cotalHooks(connectorEntry: string): HookGroups {
  const hook = hookEntryOf(connectorEntry);
  return Object.fromEntries(
    GEMINI_HOOKS.map((h) => [
      h.gemini,
      [
        {
          hooks: [{ type: "command" as const, name: `cotal-${h.connector}`, command: `"${process.execPath}" "${hook}" ${h.connector}`, timeout: h.timeoutMs }],
        },
      ],
    ]),
  );
}

/** Cotal's MCP server in settings.json: the connector, started by Gemini over stdio, trusted (its tools run without a prompt). */
export function mcpEntry(connectorEntry: string, env: Record<string, string>): Record<string, unknown> {
  return { ...connectorCommand(connectorEntry), env, trust: true };
}

function refuseUnsupported(c: LaunchCommon): void {
  if (c.agent !== undefined)
    throw geminiLaunchError(`The agent file names a subagent (${JSON.stringify(c.agent)}); a Gemini CLI launch runs as its main agent.`, {
      remedy: "Drop `agent:` from an agent file with `runtime: gemini`.",
    });
  for (const [k, v] of Object.entries(c.launchOptions))
    throw geminiLaunchError(`Launch option ${JSON.stringify(k)}=${JSON.stringify(v)} is not one Cotal passes to Gemini CLI.`, {
      remedy: "For runtime gemini there are no launch options: the posture is Gemini's policy rules (allowedTools) and the deny floor.",
    });
}

/** The environment a launch gets: an allow-list of the launcher's, Gemini's credential variables, the private home on top. */
export function buildGeminiEnv(parentEnv: RuntimeHost["parentEnv"], set: Readonly<Record<string, string>>): Record<string, string> {
  return { ...allowListedEnv(parentEnv, GEMINI_KEY_VARS), ...set, GEMINI_CLI_TRUST_WORKSPACE: "true" };
}

const json = (o: unknown): string => `${JSON.stringify(o, null, 2)}\n`;

/** The files of a private home, and the launch's environment. */
function home(host: RuntimeHost, c: LaunchCommon, extra: { seat?: { connectorEntry: string; mcpEnv: Record<string, string> }; set?: Record<string, string> }) {
  refuseUnsupported(c);
  const privateDir = privateLaunchDir(c, GEMINI_DIR_PREFIX, (m) => geminiLaunchError(m));
  const user = readUserGeminiConfig(host.parentEnv);
  const dir = path.join(privateDir, ".gemini");
  const auth = effectiveAuthType(user, host.parentEnv);
  const settings = {
    ...(auth ? { security: { auth: { selectedType: auth } } } : {}),
    ...(user.model ? { model: user.model } : {}),
    general: { enableAutoUpdate: false, enableAutoUpdateNotification: false },
    privacy: { usageStatisticsEnabled: false },
    ...(extra.seat ? { mcpServers: { [MCP_NAME]: mcpEntry(extra.seat.connectorEntry, extra.seat.mcpEnv) }, hooks: cotalHooks(extra.seat.connectorEntry) } : {}),
  };
  const files: LaunchFile[] = [
    { path: path.join(dir, "settings.json"), mode: 0o600, content: json(settings) },
    { path: path.join(dir, "policies", "cotal.toml"), mode: 0o600, content: renderPolicy(postureRules(c.allowedTools)) },
  ];
  // The persona is the global context file, after the user's own (never argv).
  const persona = c.persona !== undefined && c.persona.trim() !== "" ? c.persona : undefined;
  const context = [user.context ? readFileSync(user.context, "utf8") : undefined, persona].filter((s): s is string => s !== undefined);
  if (context.length) files.push({ path: path.join(dir, "GEMINI.md"), mode: 0o600, content: `${context.join("\n\n")}\n` });
  if (user.login) files.push({ path: path.join(dir, "oauth_creds.json"), mode: 0o600, content: readFileSync(user.login, "utf8") });
  const env = buildGeminiEnv(host.parentEnv, { ...extra.set, GEMINI_CLI_HOME: privateDir });
  return { privateDir, files, env };
}

const modelArgs = (model: string | undefined): string[] => (model ? ["--model", model] : []);

/** A headless run: `gemini --output-format json`, the prompt on stdin (never argv). (A JSON schema is refused before this, by the kernel: the CLI has no way to hold its answer to one.) */
export function buildGeminiRun(host: RuntimeHost, input: RunLaunchInput): RuntimeLaunch {
  const { privateDir, files, env } = home(host, { ...input, name: `run_${input.runId}` }, {});
  return {
    command: host.executable,
    args: ["--output-format", "json", ...modelArgs(input.model)],
    env,
    cwd: input.cwd,
    privateDir,
    files,
    // Gemini reads a prompt from stdin when stdin is not a terminal, and runs it headless.
    stdin: input.prompt,
    permissionMode: POSTURE_NAME,
  };
}

/**
 * An interactive seat: the Gemini TUI with the connector as its MCP server (joining as Gemini
 * starts it) and the connector's hook command on Gemini's hook events, so mail is handed over by
 * the hook and presence follows the session.
 */
export async function buildGeminiSeat(host: RuntimeHost, seat: SeatLaunchInput): Promise<RuntimeLaunch> {
  const material = { COTAL_LAUNCH_MATERIAL: seat.launchMaterialPath };
  const { privateDir, files, env } = home(
    host,
    { ...seat, runtimeDir: seat.seatDir },
    { seat: { connectorEntry: host.connectorEntry, mcpEnv: { ...material, COTAL_JOIN_ON: "start" } }, set: material },
  );
  return { command: host.executable, args: modelArgs(seat.model), env, cwd: seat.cwd, privateDir, files, permissionMode: POSTURE_NAME };
}

const RULES: PrivateDirRules = { prefix: GEMINI_DIR_PREFIX, fail: (message, cause) => geminiLaunchError(message, { cause }) };

/** Create the private home (0700, must not exist) and write its files (0600, exclusive). */
export function writeGeminiLaunchFiles(launch: Pick<RuntimeLaunch, "privateDir" | "files">): void {
  writePrivateFiles(launch, RULES);
}

/** Write the home, spawn, hand over the prompt; the home goes when the process does. */
export function spawnGemini(launch: RuntimeLaunch, opts: SpawnOptions): LaunchedRuntime {
  return spawnWithPrivateDir(launch, opts, RULES);
}

// The one place a GitHub Copilot CLI command line is built (docs/runtimes.md): a headless run
// (`copilot -s --output-format json`, the prompt on stdin) and an interactive seat (`copilot`, its
// TUI, under the manager's terminal). Both get a private home (COPILOT_HOME): the user's config.json
// with the working folder trusted and the banner off (else the TUI opens on a trust dialog), their
// mcp-config.json, for a seat with the connector as MCP server `cotal`; Cotal's hooks
// (hooks/cotal.json, Claude-format event names, so Copilot sends Claude-shaped payloads); the
// persona after their copilot-instructions.md. Their bring-your-own-key provider passes through
// the environment; their cache (the unpacked CLI) stays theirs. The posture is posture.ts.
import { readFileSync } from "node:fs";
import path from "node:path";
import {
  allowListedEnv,
  readJsonObjectFile,
  connectorCommand,
  DENY_FLOOR_HOOK_FLAG,
  FLAT_CONTEXT_HOOK_FLAG,
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
import { copilotLaunchError } from "./errors.js";
import { PROVIDER_VARS, readUserCopilotConfig, TOKEN_VARS } from "./home.js";
import { MCP_NAME, POSTURE_NAME, postureArgs } from "./posture.js";

/** Private Copilot homes are named so; nothing else is ever removed. */
export const COPILOT_DIR_PREFIX = "cotal-copilot-";
/** The file Cotal's hooks are in, in a Copilot home's hooks/. */
export const HOOKS_FILE = "cotal.json";

/** Copilot's own switches and folders a user may have set for every launch (its unpacked CLI's cache). */
const SWITCHES = ["XDG_CACHE_HOME", "COPILOT_CACHE_HOME", "COPILOT_GH_HOST", "COPILOT_API_URL"] as const;

/**
 * A Claude-format hook event → the connector's hook it runs, and its timeout (s). Copilot 1.0.102
 * sends Claude-shaped payloads to hooks named so and honours a Claude-format PreToolUse refusal;
 * it reads a hook's context only at the answer's top level (`--flat-context`).
 */
export const COPILOT_HOOKS: ReadonlyArray<{ event: string; args: readonly string[]; timeoutSec: number }> = [
  { event: "SessionStart", args: [FLAT_CONTEXT_HOOK_FLAG], timeoutSec: 20 },
  { event: "UserPromptSubmit", args: [FLAT_CONTEXT_HOOK_FLAG], timeoutSec: 20 },
  { event: "PreToolUse", args: [DENY_FLOOR_HOOK_FLAG], timeoutSec: 10 },
  { event: "Notification", args: [], timeoutSec: 10 },
  { event: "Stop", args: [], timeoutSec: 10 },
  { event: "SessionEnd", args: [], timeoutSec: 10 },
];

const json = (o: unknown): string => `${JSON.stringify(o, null, 2)}\n`;

/** Whether a hook command is Cotal's (any version or place of it). */
export const isCotalHook = (command: unknown): boolean => typeof command === "string" && command.includes("hook.mjs");

/** Cotal's hooks file: every connector hook of a seat (`seat`), or the deny floor alone (a run, which has no connector). */
export function hooksFile(connectorEntry: string, seat: boolean): string {
  const hook = hookEntryOf(connectorEntry);
  const hooks = COPILOT_HOOKS.filter((h) => seat || h.event === "PreToolUse").map((h) => [
    h.event,
    [
      {
        type: "command",
        command: [`"${process.execPath}"`, `"${hook}"`, h.event, ...(seat ? h.args : [DENY_FLOOR_HOOK_FLAG])].join(" "),
        timeout: h.timeoutSec,
      },
    ],
  ]);
  return json({ version: 1, hooks: Object.fromEntries(hooks) });
}

/** Cotal's MCP server in mcp-config.json: the connector, started by Copilot over stdio, all its tools. */
export function mcpEntry(connectorEntry: string, env: Record<string, string>): Record<string, unknown> {
  return { type: "local", ...connectorCommand(connectorEntry), env, tools: ["*"] };
}

function refuseUnsupported(c: LaunchCommon): void {
  if (c.agent !== undefined)
    throw copilotLaunchError(`The agent file names a subagent (${JSON.stringify(c.agent)}); a Copilot launch runs as its default agent.`, {
      remedy: "Drop `agent:` from an agent file with `runtime: copilot`.",
    });
  for (const [k, v] of Object.entries(c.launchOptions))
    throw copilotLaunchError(`Launch option ${JSON.stringify(k)}=${JSON.stringify(v)} is not one Cotal passes to GitHub Copilot CLI.`, {
      remedy: "For runtime copilot there are no launch options: the posture is Copilot's permission flags (allowedTools) and the deny floor.",
    });
}

/** The private home's files and the launch's environment and argv. */
function home(host: RuntimeHost, c: LaunchCommon, seat?: { material: string }) {
  refuseUnsupported(c);
  const posture = postureArgs(c.allowedTools);
  const privateDir = privateLaunchDir(c, COPILOT_DIR_PREFIX, (m) => copilotLaunchError(m));
  const user = readUserCopilotConfig(host.parentEnv);
  if (user.unreadable)
    throw copilotLaunchError(`The user's Copilot configuration cannot be read (${user.unreadable}); nothing was started.`, {
      remedy: `Fix the file (Cotal reads plain JSON) in ${user.dir}.`,
    });
  const dir = path.join(privateDir, "copilot");
  const file = (name: string, content: string): LaunchFile => ({ path: path.join(dir, name), mode: 0o600, content });
  const config = user.config ? (readJsonObjectFile(user.config) as { doc: Record<string, unknown> }).doc : {};
  const trusted = Array.isArray(config.trustedFolders) ? config.trustedFolders : [];
  const files: LaunchFile[] = [file("config.json", json({ ...config, trustedFolders: [...trusted, c.cwd], banner: "never" }))];
  const mcp = user.mcp ? (readJsonObjectFile(user.mcp) as { doc: Record<string, unknown> }).doc : {};
  const servers = { ...(mcp.mcpServers as Record<string, unknown> | undefined) };
  if (seat) servers[MCP_NAME] = mcpEntry(host.connectorEntry, { COTAL_LAUNCH_MATERIAL: seat.material, COTAL_JOIN_ON: "start", COTAL_RUNTIME: "copilot" });
  if (Object.keys(servers).length) files.push(file("mcp-config.json", json({ ...mcp, mcpServers: servers })));
  files.push(file(path.join("hooks", HOOKS_FILE), hooksFile(host.connectorEntry, seat !== undefined)));
  const own = path.join(user.dir, "copilot-instructions.md");
  const persona = c.persona !== undefined && c.persona.trim() !== "" ? c.persona : undefined;
  let instructions: string | undefined;
  try {
    instructions = readFileSync(own, "utf8");
  } catch {
    instructions = undefined;
  }
  const text = [instructions, persona].filter((s): s is string => s !== undefined);
  if (text.length) files.push(file("copilot-instructions.md", `${text.join("\n\n")}\n`));
  const env = {
    ...allowListedEnv(host.parentEnv, [...PROVIDER_VARS, ...TOKEN_VARS, ...SWITCHES]),
    ...(seat ? { COTAL_LAUNCH_MATERIAL: seat.material } : {}),
    COPILOT_HOME: dir,
  };
  const args = [...posture, "--no-auto-update", ...(c.model ? ["--model", c.model] : [])];
  return { privateDir, files, env, args };
}

/** A headless run: `copilot -s --output-format json`, the prompt on stdin (never argv). (A JSON schema is refused before this, by the kernel: the CLI has no way to hold its answer to one.) */
export function buildCopilotRun(host: RuntimeHost, input: RunLaunchInput): RuntimeLaunch {
  const { privateDir, files, env, args } = home(host, { ...input, name: `run_${input.runId}` });
  return {
    command: host.executable,
    args: [...args, "-s", "--output-format", "json"],
    env,
    cwd: input.cwd,
    privateDir,
    files,
    // Copilot reads a piped stdin as the prompt and runs it headless.
    stdin: input.prompt,
    permissionMode: POSTURE_NAME,
  };
}

/**
 * An interactive seat: the Copilot TUI with the connector as its MCP server (joining as Copilot
 * starts it) and the connector's hook command on Copilot's Claude-format hook events, so mail is
 * handed over by the hook and presence follows the session.
 */
export async function buildCopilotSeat(host: RuntimeHost, seat: SeatLaunchInput): Promise<RuntimeLaunch> {
  const { privateDir, files, env, args } = home(host, { ...seat, runtimeDir: seat.seatDir }, { material: seat.launchMaterialPath });
  return { command: host.executable, args, env, cwd: seat.cwd, privateDir, files, permissionMode: POSTURE_NAME };
}

const RULES: PrivateDirRules = { prefix: COPILOT_DIR_PREFIX, fail: (message, cause) => copilotLaunchError(message, { cause }) };

/** Create the private home (0700, must not exist) and write its files (0600, exclusive). */
export function writeCopilotLaunchFiles(launch: Pick<RuntimeLaunch, "privateDir" | "files">): void {
  writePrivateFiles(launch, RULES);
}

/** Write the home, spawn, hand over the prompt; the home goes when the process does. */
export function spawnCopilot(launch: RuntimeLaunch, opts: SpawnOptions): LaunchedRuntime {
  return spawnWithPrivateDir(launch, opts, RULES);
}

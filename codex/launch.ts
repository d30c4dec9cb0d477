// The one place a Codex command line is built (docs/runtimes.md): a headless run (`codex exec
// --json`) and an interactive seat (`codex` under the manager's terminal), both with a private
// CODEX_HOME (home.ts), Cotal's layer selected with `-p cotal`, an allow-listed environment, and
// a posture from Codex's own settings: unattended, approval `never` (no one would answer a
// prompt); supervised (a seat), approval `on-request`, whose asks its PermissionRequest hook puts
// to people over the mesh; both inside the `workspace-write` sandbox, with the deny floor in a
// PreToolUse hook on its shell tool. Never `--dangerously-bypass-approvals-and-sandbox`.
import { existsSync, writeFileSync } from "node:fs";
import path from "node:path";
import {
  connectorCommand,
  DENY_FLOOR_HOOK_FLAG,
  hookEntryOf,
  privateLaunchDir,
  removePrivateDir,
  spawnWithPrivateDir,
  writePrivateFiles,
  type LaunchCommon,
  type LaunchedRuntime,
  type PrivateDirRules,
  type RunLaunchInput,
  type RuntimeHost,
  type RuntimeLaunch,
  type SeatLaunchInput,
  type SpawnOptions,
} from "../runtime/index.js";
import { buildCodexEnv } from "./env-allowlist.js";
import { codexLaunchError } from "./errors.js";
import { COTAL_PROFILE, homeFiles, readUserCodexConfig, tomlString, type CotalLayer } from "./home.js";
import { trustSeatHooks } from "./hook-trust.js";

/** The runtime's name (agent files, `--agent`, the card's `runtime`). */
export const CODEX_RUNTIME_NAME = "codex";
/** Private Codex homes are named so; nothing else is ever removed. */
export const CODEX_DIR_PREFIX = "cotal-codex-";
/** Codex's sandbox modes an agent file may choose (`launchOptions: { sandbox: … }`). */
const SANDBOXES = ["read-only", "workspace-write", "danger-full-access"] as const;
/** The unattended default: writes inside the workspace, nothing asked. */
const DEFAULT_SANDBOX = "workspace-write";
/** Codex's approval policy per posture: unattended, nothing is asked; supervised, what leaves the sandbox is asked (its PermissionRequest hook asks the mesh). */
const APPROVAL = { unattended: "never", supervised: "on-request" } as const;
type Posture = keyof typeof APPROVAL;

/** The posture the launch options choose, refusing what Codex cannot honour. */
function posture(c: LaunchCommon): { sandbox: string } {
  if (c.agent !== undefined)
    throw codexLaunchError(`The agent file names a subagent (${JSON.stringify(c.agent)}); Codex has none.`, {
      remedy: "Drop `agent:` from an agent file with `runtime: codex`.",
    });
  if (c.allowedTools.length)
    throw codexLaunchError("The agent file has allowedTools (Claude permission rules); Codex has no per-tool allow rules.", {
      remedy: "Drop allowedTools for `runtime: codex`: a Codex seat runs in its sandbox with approval `never` (docs/runtimes.md).",
    });
  let sandbox: string = DEFAULT_SANDBOX;
  for (const [k, v] of Object.entries(c.launchOptions)) {
    if (k === "sandbox" && typeof v === "string" && (SANDBOXES as readonly string[]).includes(v)) sandbox = v;
    else
      throw codexLaunchError(`Launch option ${JSON.stringify(k)}=${JSON.stringify(v)} is not one Cotal passes to Codex.`, {
        remedy: `For runtime codex, the one launch option is sandbox: ${SANDBOXES.join(", ")}.`,
      });
  }
  return { sandbox };
}

function launchOf(
  host: RuntimeHost,
  c: LaunchCommon,
  layer: Omit<CotalLayer, "approvalPolicy" | "sandboxMode" | "persona" | "model">,
  head: string[],
  set: Record<string, string>,
  approval: Posture = "unattended",
): RuntimeLaunch {
  const { sandbox } = posture(c);
  const privateDir = privateLaunchDir(c, CODEX_DIR_PREFIX, (m) => codexLaunchError(m));
  const user = readUserCodexConfig(host.parentEnv);
  const persona = c.persona !== undefined && c.persona.trim() !== "" ? c.persona : undefined;
  const approvalPolicy = APPROVAL[approval];
  const files = homeFiles(privateDir, user, { ...layer, approvalPolicy, sandboxMode: sandbox, persona, model: c.model });
  return {
    command: host.executable,
    args: [...head, "-p", COTAL_PROFILE, "-C", c.cwd],
    env: buildCodexEnv({ parentEnv: host.parentEnv, codexHome: privateDir, envKeys: user.envKeys, set }),
    cwd: c.cwd,
    privateDir,
    files,
    permissionMode: `approval ${approvalPolicy}, sandbox ${sandbox}`,
  };
}

/** A hook Cotal declares in a Codex home: the event, Codex's matcher, its timeout (seconds), and whether it holds the deny floor. */
interface CodexHook {
  event: string;
  matcher?: string;
  timeoutSec: number;
  denyFloor?: boolean;
}

/**
 * Codex's PreToolUse on its shell tool (which it names `Bash`, with the command in
 * `tool_input.command`; verified on 0.171.0): the connector's hook command with the deny floor,
 * which refuses a command the floor matches (runtime/deny-floor.ts) and shows the model why.
 */
const FLOOR_HOOK: CodexHook = { event: "PreToolUse", matcher: "Bash", timeoutSec: 5, denyFloor: true };

/** Codex's PermissionRequest hook in a seat: it waits longer than the connector's bound on an ask. */
const PERMISSION_HOOK: CodexHook = { event: "PermissionRequest", timeoutSec: 600 };

/** The hooks a seat's home declares (Codex fires Claude's events, with Claude's payloads). */
const SEAT_HOOKS: readonly CodexHook[] = [
  { event: "SessionStart", timeoutSec: 15 },
  { event: "UserPromptSubmit", timeoutSec: 15 },
  // Presence `working` for shell commands (Codex's PreToolUse sees its shell tool only), and the deny floor.
  FLOOR_HOOK,
  // Fired before Codex shows its approval dialog, which waits for the hook (0.171.0): presence
  // `waiting`, condition `approval`; a supervised seat's connector asks the mesh and returns the
  // person's decision, so the hook may wait as long as an ask's bound (at most 9 minutes). A seat
  // with approval `never` is never asked.
  PERMISSION_HOOK,
  { event: "Stop", timeoutSec: 5 },
];
/** A run's home declares the floor only: a run has no connector. */
const RUN_HOOKS: readonly CodexHook[] = [FLOOR_HOOK];
/**
 * What `cotal setup --runtime codex` puts in the user's own home: a person runs that session, under
 * their own approval policy (no floor, as a hand-started Claude has none). Its connector answers
 * PermissionRequest at once with no decision: Codex's dialog waits for the hook, so the person at
 * the terminal is never kept waiting on the mesh.
 */
const SETUP_HOOKS: readonly CodexHook[] = SEAT_HOOKS.map((h) => ({ ...h, denyFloor: false, ...(h === PERMISSION_HOOK ? { timeoutSec: 5 } : {}) }));
const HOOKS_FILE = "hooks.json";

type HookGroups = Record<string, Array<{ matcher?: string; hooks: Array<{ type: "command"; command: string; timeout: number }> }>>;

/** Hook groups in Codex's hooks.json wrapper schema: every event runs the connector's hook command (`node hook.mjs <event> [--deny-floor]`). */
function hookGroups(hookEntry: string, hooks: readonly CodexHook[]): HookGroups {
  return Object.fromEntries(
    hooks.map((h) => [
      h.event,
      [
        {
          ...(h.matcher ? { matcher: h.matcher } : {}),
          hooks: [
            {
              type: "command" as const,
              command: `"${process.execPath}" "${hookEntry}" ${h.event}${h.denyFloor ? ` ${DENY_FLOOR_HOOK_FLAG}` : ""}`,
              timeout: h.timeoutSec,
            },
          ],
        },
      ],
    ]),
  );
}

/** Cotal's hook groups for a hand-started Codex (`cotal setup --runtime codex`). */
export const cotalHookGroups = (hookEntry: string): HookGroups => hookGroups(hookEntry, SETUP_HOOKS);

/** How many hooks `cotal setup --runtime codex` declares. */
export const COTAL_HOOK_COUNT = SETUP_HOOKS.length;

/**
 * Write a launch's private home with `hooks` in its hooks.json, have Codex trust them the way its
 * own review does (hook-trust.ts), and only then write Cotal's layer: the app-server that lists
 * the hooks must not start a connector of the seat's (it would hold the seat's custody). `config`
 * rewrites the home's config.toml first (a seat trusts its cwd there). Returns the launch with
 * nothing left to write; on failure the home is removed.
 */
async function writeTrustedHome(
  host: RuntimeHost,
  launch: RuntimeLaunch,
  cwd: string,
  hooks: readonly CodexHook[],
  config: (userConfig: string) => string,
): Promise<RuntimeLaunch> {
  const hooksFile = path.join(launch.privateDir, HOOKS_FILE);
  const configFile = path.join(launch.privateDir, "config.toml");
  const userConfig = launch.files.find((f) => f.path === configFile)?.content ?? "";
  const files = [
    ...launch.files.filter((f) => f.path !== configFile),
    { path: configFile, mode: 0o600, content: config(userConfig) },
    { path: hooksFile, mode: 0o600, content: `${JSON.stringify({ hooks: hookGroups(hookEntryOf(host.connectorEntry), hooks) }, null, 2)}\n` },
  ];
  const layer = files.filter((f) => path.basename(f.path) === `${COTAL_PROFILE}.config.toml`);
  writeCodexLaunchFiles({ privateDir: launch.privateDir, files: files.filter((f) => !layer.includes(f)) });
  try {
    await trustSeatHooks(host.executable, launch.env, cwd, hooksFile, hooks.length);
    for (const f of layer) writeFileSync(f.path, f.content, { mode: 0o600, flag: "wx" });
  } catch (err) {
    removePrivateDir(launch.privateDir, CODEX_DIR_PREFIX);
    throw err;
  }
  return { ...launch, files: [] };
}

/**
 * A headless run: `codex exec --json`, the prompt on stdin, nothing kept (`--ephemeral`). Its home
 * holds the deny floor's hook, trusted, so it writes the home (one `codex app-server` lists and trusts it).
 */
export async function buildCodexRun(host: RuntimeHost, input: RunLaunchInput): Promise<RuntimeLaunch> {
  const head = ["exec", "--json", "--skip-git-repo-check", "--ephemeral", ...(input.jsonSchemaFile ? ["--output-schema", input.jsonSchemaFile] : [])];
  const launch = launchOf(host, { ...input, name: `run_${input.runId}` }, {}, head, {});
  // `-` reads the prompt from stdin: never argv.
  const run = { ...launch, args: [...launch.args, "-"], stdin: input.prompt };
  return writeTrustedHome(host, run, input.cwd, RUN_HOOKS, (c) => c);
}

/**
 * An interactive seat: `codex` with Cotal's MCP server (the connector) in its layer, the
 * connector's hooks (the deny floor among them) in the home's hooks.json, trusted the way Codex's
 * own review trusts them (hook-trust.ts), and the working directory trusted, so no screen stops
 * it. Writes the home.
 */
export async function buildCodexSeat(host: RuntimeHost, seat: SeatLaunchInput): Promise<RuntimeLaunch> {
  const material = { COTAL_LAUNCH_MATERIAL: seat.launchMaterialPath };
  // The Codex TUI starts its session (and fires SessionStart) only with the first prompt: the
  // connector joins when Codex starts it, so the seat is present and can be woken before that.
  const connectorEnv = { ...material, COTAL_JOIN_ON: "start" };
  const launch = launchOf(
    host,
    { ...seat, runtimeDir: seat.seatDir },
    { mcp: { ...connectorCommand(host.connectorEntry), env: connectorEnv } },
    [],
    material,
    seat.posture ?? "unattended",
  );
  const project = `[projects.${tomlString(seat.cwd)}]`;
  return writeTrustedHome(host, launch, seat.cwd, SEAT_HOOKS, (c) => (c.includes(project) ? c : `${c}\n${project}\ntrust_level = "trusted"\n`));
}

const RULES: PrivateDirRules = { prefix: CODEX_DIR_PREFIX, fail: (message, cause) => codexLaunchError(message, { cause }) };

/** Create the private home (0700, must not exist) and write its files (0600, exclusive). */
export function writeCodexLaunchFiles(launch: Pick<RuntimeLaunch, "privateDir" | "files">): void {
  // A seat's home is written when it is built (its hooks must be trusted by Codex before it starts).
  if (launch.files.length === 0 && existsSync(launch.privateDir) && path.basename(launch.privateDir).startsWith(CODEX_DIR_PREFIX)) return;
  writePrivateFiles(launch, RULES);
}

/** Write the home, spawn, hand over the prompt; the home goes when the process does. */
export function spawnCodex(launch: RuntimeLaunch, opts: SpawnOptions): LaunchedRuntime {
  return spawnWithPrivateDir(launch, opts, RULES, writeCodexLaunchFiles);
}

// The one place a Claude command line is built. Every way Cotal starts Claude (a managed seat,
// a foreground `cotal spawn`, a one-shot `cotal run`) goes through buildClaudeLaunch, so MCP
// wiring, the allow rule, the deny floor, the permission mode, the environment allow-list and
// persona privacy cannot drift between them. A guard test fails if other code builds one.
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { z } from "zod";
import { CONNECTOR_NODE_FLAGS, COTAL_MCP_SERVER, type LaunchFile, type RuntimeLaunch } from "../runtime/index.js";

export type { LaunchFile };
import { PrincipalToken, SpaceName } from "../schemas/index.js";
import { DENY_FLOOR } from "./deny-floor.js";
import type { ClaudeAuthMode } from "./auth.js";
import { buildClaudeEnv } from "./env-allowlist.js";
import { BypassAsRootError, claudeLaunchError, LaunchOptionError } from "./errors.js";
import { validateLaunchOptions, type LaunchOptionValue } from "./launch-options.js";
import { PRIVATE_DIR_PREFIX } from "./persona-watcher.js";

/** How Claude is started. */
export const ClaudeProfile = z.enum(["seat", "foreground", "run"]);
export type ClaudeProfile = z.infer<typeof ClaudeProfile>;

/** The allow rule every launch carries. */
export const COTAL_ALLOW_RULE = `mcp__${COTAL_MCP_SERVER}__*`;
/**
 * The allow rule for the Cotal plugin's own server (`mcp__plugin_cotal_cotal__<tool>`): every
 * launch carries it too, because a user-wide plugin install starts that server inside a seat as
 * well, and `cotal setup --allow-tools` writes it to the user's Claude settings.
 */
export const PLUGIN_ALLOW_RULE = `mcp__plugin_cotal_${COTAL_MCP_SERVER}`;
/** The environment variable naming the launch material file. */
export const LAUNCH_MATERIAL_ENV = "COTAL_LAUNCH_MATERIAL";

export interface ClaudeLaunchInput {
  /** `seat`: managed by Cotal; `foreground`: `cotal spawn` in the user's terminal; `run`: one-shot `-p --output-format json`. */
  profile: ClaudeProfile;
  /** Seats only: `-p` (prompt on stdin, `stream-json` out) instead of the interactive TUI (e.g. under tmux). */
  headless?: boolean;
  /** The persona (agent file body). Written to a private file, never put in argv or env. */
  persona?: string;
  /** `--model`. */
  model?: string;
  /** A Claude subagent to run as (`--agent`), e.g. from the agent file. */
  agent?: string;
  /** Absolute working directory of the session. */
  cwd: string;
  /** Raw launch options (`--opt key=value`, agent file `launchOptions`); validated against the pass-through list. */
  launchOptions?: Readonly<Record<string, LaunchOptionValue>>;
  /** Who the seat is; the launch material (0600 JSON, written by the caller) carries the rest. */
  identity: { name: string; space: string; launchMaterialPath: string };
  /** Absolute path of the bundled connector entry (`dist/connector.mjs`). */
  connectorEntry: string;
  /** Only Cotal's MCP server: `--strict-mcp-config` (the user's other MCP servers are not loaded). */
  isolation?: boolean;
  /**
   * Load Cotal's plugin tree (`--plugin-dir`): its MCP server and its hooks, which a managed
   * interactive seat needs for mail hand-over and presence. Replaces the `--mcp-config` wiring
   * (the plugin's server is the connector; tools `mcp__plugin_cotal_cotal__*`).
   */
  pluginDir?: string;
  /** More allow rules (an agent file's allow-list), after Cotal's own. */
  allowedTools?: readonly string[];
  /** The launcher's environment (default `process.env`); the child gets only the allow-list of it. */
  parentEnv?: Readonly<Record<string, string | undefined>>;
  /** Default `subscription`. */
  authMode?: ClaudeAuthMode;
  /** Whether the launcher runs as root (default: this process's uid is 0). */
  isRoot?: boolean;
  /**
   * This is a sandbox (container or VM): the child gets IS_SANDBOX=1, which lets Claude run in
   * bypass mode as root. Default: the parent's IS_SANDBOX is exactly `1`.
   */
  sandbox?: boolean;
  /** Headless seats and runs: the prompt, written to Claude's stdin (never argv). */
  prompt?: string;
  /**
   * Seats: `supervised` starts Claude in its `default` permission mode (not `dontAsk`): the allow
   * rules run, the deny floor refuses, and anything else raises a permission ask that the
   * connector's PermissionRequest hook puts to people over the mesh (docs/security.md).
   */
  posture?: "unattended" | "supervised";
  /** Runs only: a JSON Schema file for structured output (`--json-schema`). */
  jsonSchemaFile?: string;
  /**
   * Runs only: leave Cotal's MCP server out (no `--mcp-config`, no launch material in the
   * environment). A one-shot run that does not join the mesh needs no connector.
   */
  noMesh?: boolean;
  /** Extra parent variables to forward (e.g. SSH_AUTH_SOCK). */
  passEnv?: readonly string[];
  /** The Claude executable (default `claude`, found on PATH). */
  claudePath?: string;
  /** The node binary that runs the connector (default this process's). */
  nodePath?: string;
  /** Where the private launch directory goes (default XDG_RUNTIME_DIR, else the OS temp dir). */
  runtimeDir?: string;
}

/** What to run: pass `command`, `args`, `cwd` and `env` to spawn exactly as they are (the seam's launch, runtime/adapter.ts). */
export interface ClaudeLaunch extends RuntimeLaunch {
  profile: ClaudeProfile;
  /** The persona file, when there is a persona. */
  personaFile?: string;
}

const PERSONA_FILE = "persona.md";
/** A Claude permission rule: `Tool` or `Tool(specifier)`, tool names like `mcp__server__tool` included. */
const ALLOW_RULE = /^[A-Za-z][\w-]*(\*)?(\([^()\n]*\))?$/;
const MCP_CONFIG_FILE = "mcp.json";

/** Build the command line, environment and launch files for one Claude start. Pure apart from a random directory name (and reading `jsonSchemaFile`). */
export function buildClaudeLaunch(input: ClaudeLaunchInput): ClaudeLaunch {
  const profile = ClaudeProfile.parse(input.profile);
  const parentEnv = input.parentEnv ?? process.env;
  const headless = profile === "run" || (profile === "seat" && input.headless === true);
  if (input.headless && profile !== "seat")
    throw claudeLaunchError(`headless is a seat setting; the ${profile} profile is always ${profile === "run" ? "headless" : "interactive"}.`);
  if (input.prompt !== undefined && !headless) {
    throw claudeLaunchError(`A prompt is given, but the ${profile} profile is interactive: only headless seats and runs read a prompt.`);
  }
  if (profile === "run" && (input.prompt === undefined || input.prompt.trim() === "")) {
    throw claudeLaunchError("A run needs a prompt.", { remedy: "Give the prompt (`cotal run <persona> --prompt …`)." });
  }
  if (input.jsonSchemaFile !== undefined && profile !== "run") throw claudeLaunchError("A JSON schema is a run setting (`cotal run --json-schema FILE`).");
  if (input.noMesh && profile !== "run") throw claudeLaunchError("Only a run may leave Cotal's MCP server out (noMesh); seats need it.");

  for (const [what, p] of [
    ["working directory", input.cwd],
    ["connector entry", input.connectorEntry],
    ["launch material path", input.identity.launchMaterialPath],
    ...(input.pluginDir !== undefined ? ([["plugin directory", input.pluginDir]] as const) : []),
  ] as const) {
    if (!path.isAbsolute(p)) throw claudeLaunchError(`The ${what} must be an absolute path, not ${JSON.stringify(p)}.`);
  }
  const name = PrincipalToken.safeParse(input.identity.name);
  const space = SpaceName.safeParse(input.identity.space);
  if (!name.success || !space.success) {
    throw claudeLaunchError(`Invalid seat identity ${JSON.stringify(input.identity.space)}/${JSON.stringify(input.identity.name)}.`, {
      remedy: "Use a space and a name made of letters, digits, '_' (and '-' in a space).",
    });
  }

  for (const rule of input.allowedTools ?? []) {
    // A rule is a tool name, optionally with a specifier: never something Claude would read as a flag.
    if (!ALLOW_RULE.test(rule)) {
      throw claudeLaunchError(`The allow rule ${JSON.stringify(rule)} is not a permission rule.`, {
        remedy: "Write allow rules as a tool name, optionally with a specifier: Read, Bash(npm test:*), mcp__server__tool.",
      });
    }
  }
  const options = validateLaunchOptions(input.launchOptions ?? {});
  const take = (flag: string, fromInput: string | undefined): string | undefined => {
    const opt = options.get(flag);
    if (opt && fromInput !== undefined && opt.value !== fromInput) {
      throw new LaunchOptionError(
        flag,
        "conflict",
        `The ${flag} is given twice, as ${JSON.stringify(fromInput)} and as launch option ${JSON.stringify(opt.value)}.`,
        `Give the ${flag} once.`,
      );
    }
    if (opt) {
      options.delete(flag);
      return String(opt.value);
    }
    return fromInput;
  };
  const model = take("model", input.model);
  const agent = take("agent", input.agent);

  // Permission mode: managed profiles have no human to answer prompts.
  const optMode = options.get("permission-mode");
  const skip = (options.get("dangerously-skip-permissions")?.argv.length ?? 0) > 0;
  const managed = profile !== "foreground";
  // Managed profiles run `dontAsk`: what the allow rules name runs, anything else is refused (no
  // one would answer a prompt). Bypass only when the agent file or launch options ask for it.
  if (input.posture === "supervised" && profile !== "seat") throw claudeLaunchError(`supervised is a seat posture; the ${profile} profile has none.`);
  // A supervised seat asks (its hook answers from the mesh); an explicit mode in the launch options still wins.
  const permissionMode = optMode ? String(optMode.value) : skip ? undefined : input.posture === "supervised" ? "default" : managed ? "dontAsk" : undefined;
  if (optMode) options.delete("permission-mode");
  const bypass = permissionMode === "bypassPermissions" || skip;
  const sandbox = input.sandbox ?? parentEnv.IS_SANDBOX === "1";
  const isRoot = input.isRoot ?? process.getuid?.() === 0;
  if (bypass && isRoot && !sandbox) throw new BypassAsRootError(parentEnv.IS_SANDBOX);

  const runtimeDir = input.runtimeDir ?? parentEnv.XDG_RUNTIME_DIR ?? os.tmpdir();
  if (!path.isAbsolute(runtimeDir)) throw claudeLaunchError(`The runtime directory must be an absolute path, not ${JSON.stringify(runtimeDir)}.`);
  const privateDir = path.join(runtimeDir, `${PRIVATE_DIR_PREFIX}${space.data}-${name.data}-${randomBytes(6).toString("hex")}`);
  const mcpConfigFile = path.join(privateDir, MCP_CONFIG_FILE);
  const files: LaunchFile[] =
    input.pluginDir !== undefined || input.noMesh
      ? []
      : [
          {
            path: mcpConfigFile,
            mode: 0o600,
            content: `${JSON.stringify(
              {
                mcpServers: {
                  [COTAL_MCP_SERVER]: { type: "stdio", command: input.nodePath ?? process.execPath, args: [...CONNECTOR_NODE_FLAGS, input.connectorEntry] },
                },
              },
              null,
              2,
            )}\n`,
          },
        ];
  const persona = input.persona !== undefined && input.persona.trim() !== "" ? input.persona : undefined;
  const personaFile = persona !== undefined ? path.join(privateDir, PERSONA_FILE) : undefined;
  if (personaFile !== undefined && persona !== undefined) files.push({ path: personaFile, mode: 0o600, content: persona });

  const args: string[] = [];
  if (profile === "run") args.push("-p", "--output-format", "json");
  else if (headless) args.push("-p", "--output-format", "stream-json", "--verbose");
  if (input.pluginDir !== undefined) args.push("--plugin-dir", input.pluginDir);
  else if (!input.noMesh) args.push("--mcp-config", mcpConfigFile);
  if (input.isolation) args.push("--strict-mcp-config");
  args.push("--allowedTools", COTAL_ALLOW_RULE, PLUGIN_ALLOW_RULE, ...(input.allowedTools ?? []));
  args.push("--disallowedTools", ...DENY_FLOOR);
  if (permissionMode !== undefined) args.push(`--permission-mode=${permissionMode}`);
  if (model !== undefined) args.push(`--model=${model}`);
  if (agent !== undefined) args.push(`--agent=${agent}`);
  if (personaFile !== undefined) args.push("--append-system-prompt-file", personaFile);
  if (input.jsonSchemaFile !== undefined) args.push(`--json-schema=${readJsonSchema(input.jsonSchemaFile)}`);
  for (const opt of options.values()) {
    if (opt.flag === "verbose" && args.includes("--verbose")) continue;
    args.push(...opt.argv);
  }

  const set: Record<string, string> = input.noMesh ? {} : { [LAUNCH_MATERIAL_ENV]: input.identity.launchMaterialPath };
  if (input.sandbox === true) set.IS_SANDBOX = "1";
  const env = buildClaudeEnv({ parentEnv, authMode: input.authMode ?? "subscription", set, passEnv: input.passEnv ?? [] });
  if (input.sandbox === false) delete env.IS_SANDBOX;

  return {
    profile,
    command: input.claudePath ?? "claude",
    args,
    env,
    cwd: input.cwd,
    privateDir,
    files,
    ...(personaFile !== undefined ? { personaFile } : {}),
    ...(headless && input.prompt !== undefined ? { stdin: input.prompt } : {}),
    ...(permissionMode !== undefined ? { permissionMode } : {}),
  };
}

/** Claude's `--json-schema` takes the schema text itself: read the file and pass it compacted. */
function readJsonSchema(file: string): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, "utf8"));
  } catch (cause) {
    throw claudeLaunchError(
      `Cannot read the JSON schema ${file}: ${cause instanceof SyntaxError ? "not valid JSON" : ((cause as NodeJS.ErrnoException).code ?? String(cause))}.`,
      {
        remedy: "Give a file holding one JSON Schema object.",
        cause,
      },
    );
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
    throw claudeLaunchError(`The JSON schema ${file} is not a JSON object.`, { remedy: "Give a file holding one JSON Schema object." });
  }
  return JSON.stringify(parsed);
}

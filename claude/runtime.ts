// The Claude adapter behind the runtime seam (runtime/adapter.ts, docs/runtimes.md): the launch
// builder's run and seat profiles, the seat's pre-seeded config dir, its screens, its run output.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { RunLaunchInput, RuntimeAdapter, RuntimeHost } from "../runtime/index.js";
import { ClaudeAuthChoice, ClaudeAuthMode, describeClaudeAuth, detectClaudeAuth } from "./auth.js";
import { claudeShellEnv } from "./env-allowlist.js";
import { buildClaudeLaunch } from "./launch-builder.js";
import { normaliseOptionKey } from "./launch-options.js";
import { launchClaude, writeLaunchFiles } from "./persona.js";
import { runResultOf } from "./run-result.js";
import { authFailureOnScreen, classifyScreen, seedSeatConfig } from "./seat-config.js";
import { carriedResume, claudeConfigDir, findSession, sessionsNamed } from "./transcripts.js";
import { applyAllowRule, claudeUserSettingsPath, planAllowRule } from "./allow-rule.js";
import { ALWAYS_DROPPED } from "./env-allowlist.js";
import { PLUGIN_ALLOW_RULE } from "./launch-builder.js";
import { MANAGER_WAKE_PROMPT, RESTART_MANAGER, permissionRequestReply } from "../runtime/index.js";

/** The host settings a Claude host carries (RuntimeHost.settings). */
export interface ClaudeHostSettings {
  /** Cotal's plugin tree (MCP server and hooks) a seat loads. */
  pluginDir?: string | undefined;
  /**
   * Pre-seed the seat's config dir (default true). `false` starts Claude with an empty one, as an
   * unmanaged first run would: the seat then stops on a first-run screen and is failed (tests of the screen check).
   */
  seedConfig?: boolean | undefined;
}

/** The seat-private config dir under a seat's folder. */
const SEAT_CONFIG_DIR = "claude-config";

const settingsOf = (host: Pick<RuntimeHost, "settings">): ClaudeHostSettings => (host.settings ?? {}) as ClaudeHostSettings;

/** The choice a host made with `--claude-auth` (`auto` when none, or one that is not a mode). */
const choiceOf = (authMode: string | undefined): ClaudeAuthChoice => ClaudeAuthChoice.safeParse(authMode ?? "auto").data ?? "auto";

/** The auth mode Claude seats and runs use: the one chosen, else what the environment selects. */
function authModeOf(host: Pick<RuntimeHost, "parentEnv" | "authMode">): ClaudeAuthMode {
  const choice = choiceOf(host.authMode);
  return choice === "auto" ? detectClaudeAuth(host.parentEnv) : choice;
}

/** The run's `--max-budget-usd`: the lower of the agent file's own and the budget's headroom. */
function withBudgetCap(options: RunLaunchInput["launchOptions"], headroom: number | undefined): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  let fileCap: number | undefined;
  for (const [k, v] of Object.entries(options)) {
    if (normaliseOptionKey(k) === "max-budget-usd" && typeof v === "number") fileCap = v;
    else out[k] = v;
  }
  const cap = [fileCap, headroom].filter((v): v is number => v !== undefined);
  if (cap.length) out["max-budget-usd"] = Math.min(...cap);
  return out;
}

export const claudeRuntime = {
  name: "claude",
  label: "Claude",
  command: "claude",
  binEnv: "COTAL_CLAUDE_BIN",
  installHint: `Install @anthropic-ai/claude-code where the manager runs (or set COTAL_CLAUDE_BIN), ${RESTART_MANAGER}.`,
  sessions: { dir: claudeConfigDir, find: findSession, named: sessionsNamed },
  plugin: { allowRule: PLUGIN_ALLOW_RULE, settingsPath: claudeUserSettingsPath, planAllowRule, applyAllowRule, nestedSessionEnv: ALWAYS_DROPPED },
  connector: { meta: "claude-code", approvals: { sessions: "all", reply: permissionRequestReply } },
  capabilities: {
    mailHook: true,
    preToolUse: "all",
    notificationHook: true,
    stopFailureHook: true,
    denyFloor: "cli",
    terminalWake: true,
    headlessRun: true,
    runCost: "usd",
    jsonSchema: true,
    carry: true,
    eventPlane: true,
    // Its PermissionRequest hook returns allow or deny (connector/approvals.ts).
    approvals: true,
  },
  wakePrompt: MANAGER_WAKE_PROMPT,

  authModes: ["auto", ...ClaudeAuthMode.options],
  shellEnv: (env, authMode) => claudeShellEnv(env, authModeOf({ parentEnv: env, authMode })),

  auth(host) {
    const { ready, problem, remedy, ...detail } = describeClaudeAuth(choiceOf(host.authMode), host.parentEnv);
    return {
      ready,
      summary: `${detail.mode}${detail.vars.length ? ` (${detail.vars.join(", ")})` : ""}${detail.login ? ` login ${detail.login}` : ""}`,
      ...(problem ? { problem } : {}),
      ...(remedy ? { remedy } : {}),
      detail,
    };
  },

  buildRun(host, input) {
    return buildClaudeLaunch({
      profile: "run",
      noMesh: true,
      prompt: input.prompt,
      cwd: input.cwd,
      identity: { name: `run_${input.runId}`, space: input.space, launchMaterialPath: "/dev/null" },
      connectorEntry: host.connectorEntry,
      parentEnv: host.parentEnv,
      authMode: authModeOf(host),
      claudePath: host.executable,
      runtimeDir: input.runtimeDir,
      ...(input.jsonSchemaFile ? { jsonSchemaFile: input.jsonSchemaFile } : {}),
      ...(input.model ? { model: input.model } : {}),
      ...(input.persona ? { persona: input.persona } : {}),
      ...(input.agent ? { agent: input.agent } : {}),
      launchOptions: withBudgetCap(input.launchOptions, input.maxBudgetUsd),
      allowedTools: input.allowedTools,
    });
  },

  parseRun: runResultOf,

  async buildSeat(host, seat) {
    const authMode = authModeOf(host);
    const configDir = join(seat.seatDir, SEAT_CONFIG_DIR);
    const resume = seat.resume ? await carriedResume(configDir, seat.cwd, seat.resume) : undefined;
    const pluginDir = settingsOf(host).pluginDir;
    const launch = buildClaudeLaunch({
      profile: "seat",
      cwd: seat.cwd,
      identity: { name: seat.name, space: seat.space, launchMaterialPath: seat.launchMaterialPath },
      connectorEntry: host.connectorEntry,
      ...(pluginDir ? { pluginDir } : {}),
      parentEnv: { ...host.parentEnv, CLAUDE_CONFIG_DIR: configDir },
      authMode,
      claudePath: host.executable,
      runtimeDir: seat.seatDir,
      ...(seat.model ? { model: seat.model } : {}),
      ...(seat.persona ? { persona: seat.persona } : {}),
      ...(seat.agent ? { agent: seat.agent } : {}),
      allowedTools: seat.allowedTools,
      ...(seat.posture ? { posture: seat.posture } : {}),
      launchOptions: { ...seat.launchOptions, ...(resume ? { resume: resume.session, "fork-session": resume.fork } : {}) },
    });
    if (settingsOf(host).seedConfig === false) mkdirSync(configDir, { recursive: true, mode: 0o700 });
    else {
      seedSeatConfig({
        dir: configDir,
        cwd: seat.cwd,
        apiKey: authMode === "api-key" ? host.parentEnv.ANTHROPIC_API_KEY : undefined,
        parentEnv: host.parentEnv,
        bypassAccepted: launch.permissionMode === "bypassPermissions",
      });
    }
    return launch;
  },

  classifyScreen,
  authFailureOnScreen,

  writeLaunchFiles,

  spawn(launch, opts) {
    return launchClaude({ profile: "run", ...launch }, opts);
  },
} as const satisfies RuntimeAdapter;

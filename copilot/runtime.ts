// The GitHub Copilot CLI adapter behind the runtime seam (runtime/adapter.ts, docs/runtimes.md).
import { PROVIDER_VARS, readUserCopilotConfig, TOKEN_VARS } from "./home.js";
import { buildCopilotRun, buildCopilotSeat, spawnCopilot, writeCopilotLaunchFiles } from "./launch.js";
import { copilotRunResultOf } from "./run-result.js";
import { setupCopilot } from "./setup.js";
import { MANAGER_WAKE_PROMPT, RESTART_MANAGER, screenReaders, type BlockingScreen, type RuntimeAdapter } from "../runtime/index.js";
import { copilotTranscriptRecords } from "./transcript.js";

/** The TUI's footer under its input (1.0.102). */
const INPUT_SCREEN = /\/ commands · \? help/;
const BLOCKING: readonly BlockingScreen[] = [
  { name: "the folder-trust dialog", pattern: /Do you trust the files in this folder/i },
  { name: "an approval prompt", pattern: /Do you want to (?:run this command|allow|make this edit|create)/i },
  { name: "the login screen", pattern: /Please use \/login|Sign in to GitHub|not logged in/i },
];
const AUTH_FAILURE = /invalid x-api-key|authentication_error|401 Unauthorized|Incorrect API key|No authentication information found/i;

export const copilotRuntime = {
  name: "copilot",
  label: "GitHub Copilot CLI",
  command: "copilot",
  binEnv: "COTAL_COPILOT_BIN",
  installHint: `Install @github/copilot where the manager runs (or set COTAL_COPILOT_BIN), ${RESTART_MANAGER}.`,
  connector: { meta: "copilot-cli", transcript: copilotTranscriptRecords },
  capabilities: {
    mailHook: true,
    preToolUse: "all",
    notificationHook: true,
    stopFailureHook: false,
    // Copilot's permission flags have no command patterns that refuse a match only: a PreToolUse hook (`--deny-floor`) holds the floor, on the shell tool.
    denyFloor: "hook-bash",
    terminalWake: true,
    headlessRun: true,
    runCost: "usage",
    jsonSchema: false,
    carry: false,
    eventPlane: true,
    // Its permissionRequest hook fires, but an answer from it was not seen to replace its dialog (1.0.102): no supervised posture.
    approvals: false,
  },
  wakePrompt: MANAGER_WAKE_PROMPT,
  submitDelayMs: 500,
  // Its first start unpacks the CLI into the user's cache (≈ 235 MB), slow on a loaded host.
  screenTimeoutMs: 120_000,

  shellEnv(env) {
    const out: Record<string, string> = {};
    for (const k of ["COPILOT_HOME", "XDG_CACHE_HOME", "COPILOT_CACHE_HOME", ...PROVIDER_VARS, ...TOKEN_VARS]) if (env[k] !== undefined) out[k] = env[k];
    return out;
  },

  auth(host) {
    const u = readUserCopilotConfig(host.parentEnv);
    const e = host.parentEnv;
    const tokens = TOKEN_VARS.filter((k) => !!e[k]);
    const byok = e.COPILOT_PROVIDER_BASE_URL ? `provider ${e.COPILOT_PROVIDER_TYPE ?? "openai"} at COPILOT_PROVIDER_BASE_URL` : undefined;
    const summary = [
      u.config ? `config ${u.config}` : `no config.json in ${u.dir}`,
      byok,
      e.COPILOT_MODEL ? "model from COPILOT_MODEL" : undefined,
      u.login ? `login ${u.login}` : undefined,
      tokens.length ? `token from ${tokens.join(", ")}` : undefined,
    ]
      .filter(Boolean)
      .join("; ");
    if (u.unreadable)
      return { ready: false, summary, problem: `Copilot's configuration cannot be read (${u.unreadable}).`, remedy: `Fix it, ${RESTART_MANAGER}.` };
    if (byok && !e.COPILOT_MODEL)
      return {
        ready: false,
        summary,
        problem: "COPILOT_PROVIDER_BASE_URL names a provider, but COPILOT_MODEL (which a provider of one's own needs) is not set.",
        remedy: `Export COPILOT_MODEL where the manager runs, ${RESTART_MANAGER}.`,
      };
    if (!byok && !u.login && !tokens.length)
      return {
        ready: false,
        summary,
        problem: `GitHub Copilot CLI has no login here (none in ${u.dir}/config.json, no ${TOKEN_VARS.join("/")}, no COPILOT_PROVIDER_BASE_URL).`,
        remedy: `Log in once with \`copilot\` (/login) as this user, or export COPILOT_GITHUB_TOKEN, or a provider of your own (COPILOT_PROVIDER_BASE_URL, COPILOT_MODEL), ${RESTART_MANAGER}.`,
      };
    return { ready: true, summary };
  },

  buildRun: buildCopilotRun,
  parseRun: copilotRunResultOf,
  buildSeat: buildCopilotSeat,
  ...screenReaders({ input: INPUT_SCREEN, blocking: BLOCKING, authFailure: AUTH_FAILURE }),
  setup: setupCopilot,
  writeLaunchFiles: writeCopilotLaunchFiles,
  spawn: spawnCopilot,
} as const satisfies RuntimeAdapter;

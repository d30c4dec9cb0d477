// The Gemini CLI adapter behind the runtime seam (runtime/adapter.ts, docs/runtimes.md).
import { authProblem, effectiveAuthType, GEMINI_KEY_VARS, readUserGeminiConfig } from "./home.js";
import { buildGeminiRun, buildGeminiSeat, GEMINI_RUNTIME_NAME, spawnGemini, writeGeminiLaunchFiles } from "./launch.js";
import { geminiRunResultOf } from "./run-result.js";
import { setupGemini } from "./setup.js";
import { MANAGER_WAKE_PROMPT, RESTART_MANAGER, screenReaders, type BlockingScreen, type RuntimeAdapter } from "../runtime/index.js";
import { geminiTranscriptRecords } from "./transcript.js";

/** The TUI's input prompt (0.61.0), and the screens that stop an unattended start. */
const INPUT_SCREEN = /Type your message or @path\/to\/file/;
const BLOCKING: readonly BlockingScreen[] = [
  { name: "the trust screen", pattern: /Do you trust (?:this folder|the files in this folder)/i },
  { name: "the auth screen", pattern: /How would you like to authenticate|Get started/ },
  { name: "an approval prompt", pattern: /Allow execution of|Apply this change\?|Do you want to proceed\?/ },
];
const AUTH_FAILURE = /API key not valid|API_KEY_INVALID|UNAUTHENTICATED|PERMISSION_DENIED/;

export const geminiRuntime = {
  name: GEMINI_RUNTIME_NAME,
  label: "Gemini CLI",
  command: "gemini",
  binEnv: "COTAL_GEMINI_BIN",
  installHint: `Install @google/gemini-cli where the manager runs (or set COTAL_GEMINI_BIN), ${RESTART_MANAGER}.`,
  connector: { meta: "gemini-cli", transcript: geminiTranscriptRecords },
  capabilities: {
    mailHook: true,
    preToolUse: "all",
    notificationHook: true,
    stopFailureHook: false,
    denyFloor: "cli",
    terminalWake: true,
    headlessRun: true,
    runCost: "usage",
    jsonSchema: false,
    carry: false,
    eventPlane: true,
    approvals: false,
  },
  wakePrompt: MANAGER_WAKE_PROMPT,
  // Its TUI reads a burst of typed text as a paste and an Enter within 40 ms of it as a newline (0.61.0).
  submitDelayMs: 500,
  // Its TUI (a large Node bundle) takes ~20 s to draw its input screen on a loaded 2-core host (0.61.0).
  screenTimeoutMs: 120_000,

  shellEnv(env) {
    const out: Record<string, string> = {};
    for (const k of ["GEMINI_CLI_HOME", ...GEMINI_KEY_VARS]) if (env[k] !== undefined) out[k] = env[k];
    return out;
  },

  auth(host) {
    const u = readUserGeminiConfig(host.parentEnv);
    const type = effectiveAuthType(u, host.parentEnv);
    const keys = GEMINI_KEY_VARS.filter((k) => !!host.parentEnv[k]); // an empty variable is no key
    const summary = [
      u.settings ? `settings ${u.settings}` : `no settings.json in ${u.dir}`,
      type ? `auth ${type}` : undefined,
      u.login ? `login ${u.login}` : undefined,
      keys.length ? `variables ${keys.join(", ")}` : undefined,
    ]
      .filter(Boolean)
      .join("; ");
    if (u.unreadable)
      return {
        ready: false,
        summary,
        problem: `${u.settings} is not plain JSON (${u.unreadable}); Cotal cannot tell which auth method it selects.`,
        remedy: `Remove the comments from it (or fix it), ${RESTART_MANAGER}.`,
      };
    const bad = authProblem(type, u, host.parentEnv);
    return bad ? { ready: false, summary, ...bad } : { ready: true, summary };
  },

  buildRun: buildGeminiRun,
  parseRun: geminiRunResultOf,
  buildSeat: buildGeminiSeat,
  ...screenReaders({ input: INPUT_SCREEN, blocking: BLOCKING, authFailure: AUTH_FAILURE }),
  setup: setupGemini,
  writeLaunchFiles: writeGeminiLaunchFiles,
  spawn: spawnGemini,
} as const satisfies RuntimeAdapter;

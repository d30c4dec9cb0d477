// The Codex adapter behind the runtime seam (runtime/adapter.ts, docs/runtimes.md).
import { readUserCodexConfig } from "./home.js";
import { buildCodexRun, buildCodexSeat, CODEX_RUNTIME_NAME, spawnCodex, writeCodexLaunchFiles } from "./launch.js";
import { codexRunResultOf } from "./run-result.js";
import { setupCodex } from "./setup.js";
import {
  configSummary,
  keysSet,
  MANAGER_WAKE_PROMPT,
  RESTART_MANAGER,
  screenReaders,
  unsetKeyVars,
  type BlockingScreen,
  type RuntimeAdapter,
  permissionRequestReply,
} from "../runtime/index.js";
import { codexTranscriptRecords } from "./transcript.js";

/** The TUI's input footer, and the screens that stop an unattended start. */
const INPUT_SCREEN = /\? for shortcuts|context left/;
const BLOCKING: readonly BlockingScreen[] = [
  { name: "the sign-in screen", pattern: /Sign in with ChatGPT|Provide your own API key/ },
  { name: "the trust screen", pattern: /Do you trust the contents of this directory|allow Codex to work in this folder/i },
  { name: "an approval prompt", pattern: /Would you like to run the following command\?|Allow command\?/ },
];
const AUTH_FAILURE = /401 Unauthorized|invalid_api_key|Missing environment variable/;

export const codexRuntime = {
  name: CODEX_RUNTIME_NAME,
  label: "Codex",
  command: "codex",
  binEnv: "COTAL_CODEX_BIN",
  installHint: `Install @openai/codex where the manager runs (or set COTAL_CODEX_BIN), ${RESTART_MANAGER}.`,
  // Codex fires PermissionRequest with Claude's payload before its dialog, and takes Claude's decision shape back.
  connector: { meta: "codex", transcript: codexTranscriptRecords, approvals: { sessions: "managed", reply: permissionRequestReply } },
  capabilities: {
    mailHook: true,
    preToolUse: "bash",
    notificationHook: true,
    stopFailureHook: false,
    denyFloor: "hook-bash",
    terminalWake: true,
    headlessRun: true,
    runCost: "usage",
    jsonSchema: true,
    carry: false,
    eventPlane: true,
    // Its PermissionRequest hook runs before its dialog and takes Claude's decision shape (0.171.0).
    approvals: true,
  },
  wakePrompt: MANAGER_WAKE_PROMPT,
  // Codex reads typed text followed at once by Enter as a paste and inserts a newline (seen on 0.171.0).
  submitDelayMs: 500,

  shellEnv(env) {
    const u = readUserCodexConfig(env);
    const out: Record<string, string> = {};
    for (const k of ["CODEX_HOME", "OPENAI_API_KEY", "CODEX_API_KEY", ...u.envKeys]) if (env[k] !== undefined) out[k] = env[k];
    return out;
  },

  auth(host) {
    const u = readUserCodexConfig(host.parentEnv);
    const keys = keysSet([...u.envKeys, "OPENAI_API_KEY", "CODEX_API_KEY"], host.parentEnv);
    const summary = configSummary(
      [u.config ? `config ${u.config}${u.provider ? ` (provider ${u.provider}${u.model ? `, model ${u.model}` : ""})` : ""}` : `no config.toml in ${u.home}`],
      u.login,
      keys,
    );
    const unset = unsetKeyVars(u.envKeys, host.parentEnv, summary, (m) => `The Codex config names ${m} for its provider key, which is not set.`);
    if (unset) return unset;
    if (!u.login && !keys.length)
      return {
        ready: false,
        summary,
        problem: `Codex has no credentials here (no ${u.home}/auth.json, no provider key variable).`,
        remedy: `Log in once with \`codex login\` as this user, or export OPENAI_API_KEY, ${RESTART_MANAGER}.`,
      };
    return { ready: true, summary };
  },

  buildRun: buildCodexRun,
  parseRun: codexRunResultOf,
  buildSeat: buildCodexSeat,
  ...screenReaders({ input: INPUT_SCREEN, blocking: BLOCKING, authFailure: AUTH_FAILURE }),
  setup: setupCodex,
  writeLaunchFiles: writeCodexLaunchFiles,
  spawn: spawnCodex,
} as const satisfies RuntimeAdapter;

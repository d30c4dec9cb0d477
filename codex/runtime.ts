// The Codex adapter behind the runtime seam (runtime/adapter.ts, docs/runtimes.md).
import { readUserCodexConfig } from "./home.js";
import { buildCodexRun, buildCodexSeat, CODEX_RUNTIME_NAME, spawnCodex, writeCodexLaunchFiles } from "./launch.js";
import { codexRunResultOf } from "./run-result.js";
import { setupCodex } from "./setup.js";
import { MANAGER_WAKE_PROMPT, RESTART_MANAGER, screenReaders, type BlockingScreen, type RuntimeAdapter, permissionRequestReply } from "../runtime/index.js";
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
    const keys = [...u.envKeys, "OPENAI_API_KEY", "CODEX_API_KEY"].filter((k) => !!host.parentEnv[k]); // an empty variable is no key
    const summary = [
      u.config ? `config ${u.config}${u.provider ? ` (provider ${u.provider}${u.model ? `, model ${u.model}` : ""})` : ""}` : `no config.toml in ${u.home}`,
      u.login ? `login ${u.login}` : undefined,
      keys.length ? `keys from ${keys.join(", ")}` : undefined,
    ]
      .filter(Boolean)
      .join("; ");
    const missing = u.envKeys.filter((k) => !host.parentEnv[k]);
    if (missing.length)
      return {
        ready: false,
        summary,
        problem: `The Codex config names ${missing.join(", ")} for its provider key, which is not set.`,
        remedy: `Export ${missing.join(", ")} where the manager runs, then restart it.`,
      };
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

// The pi adapter behind the runtime seam (runtime/adapter.ts, docs/runtimes.md).
import { PI_KEY_VARS, PI_SWITCHES, readUserPiConfig } from "./home.js";
import { buildPiRun, buildPiSeat, spawnPi, writePiLaunchFiles } from "./launch.js";
import { piRunResultOf } from "./run-result.js";
import { setupPi } from "./setup.js";
import {
  configSummary,
  keysSet,
  MANAGER_WAKE_PROMPT,
  RESTART_MANAGER,
  screenReaders,
  unsetKeyVars,
  type BlockingScreen,
  type RuntimeAdapter,
} from "../runtime/index.js";

/** The TUI's footer under its editor (0.73.1): the context window's use, `0.0%/128k`. */
const INPUT_SCREEN = /\d+(?:\.\d+)?%\/\d+(?:\.\d+)?[kM]\b/;
/** pi has no first-run, trust or approval screen; a model it cannot pick stops it before any input. */
const BLOCKING: readonly BlockingScreen[] = [{ name: "no model", pattern: /No models? (?:available|selected|found)/i }];
const AUTH_FAILURE = /invalid x-api-key|authentication_error|Incorrect API key|No API key (?:found|for)|401 Unauthorized/i;

export const piRuntime = {
  name: "pi",
  label: "pi",
  command: "pi",
  binEnv: "COTAL_PI_BIN",
  installHint: `Install @mariozechner/pi-coding-agent where the manager runs (or set COTAL_PI_BIN), ${RESTART_MANAGER}.`,
  connector: { meta: "pi" },
  capabilities: {
    mailHook: true,
    preToolUse: "all",
    // pi never asks a person (it has no permission system): there is no approval state to show.
    notificationHook: false,
    stopFailureHook: true,
    // Cotal's extension blocks a floor command in pi's tool_call event, on its one shell tool.
    denyFloor: "hook-bash",
    terminalWake: true,
    headlessRun: true,
    runCost: "usd",
    jsonSchema: false,
    carry: false,
    eventPlane: true,
    // pi never asks a person: there is no ask to send to the mesh (no supervised posture).
    approvals: false,
  },
  wakePrompt: MANAGER_WAKE_PROMPT,
  submitDelayMs: 300,
  // Its TUI starts in a second or two; the extension starts the connector before it draws.
  screenTimeoutMs: 60_000,

  shellEnv(env) {
    const u = readUserPiConfig(env);
    const out: Record<string, string> = {};
    for (const k of ["PI_CODING_AGENT_DIR", ...PI_SWITCHES, ...PI_KEY_VARS, ...u.envKeys]) if (env[k] !== undefined) out[k] = env[k];
    return out;
  },

  auth(host) {
    const u = readUserPiConfig(host.parentEnv);
    const keys = keysSet([...u.envKeys, ...PI_KEY_VARS], host.parentEnv);
    const summary = configSummary(
      [
        u.models ? `models ${u.models}` : `no models.json in ${u.dir}`,
        u.provider || u.model ? `default ${[u.provider, u.model].filter(Boolean).join("/")}` : undefined,
      ],
      u.login,
      keys,
    );
    if (u.unreadable) return { ready: false, summary, problem: `pi's configuration cannot be read (${u.unreadable}).`, remedy: `Fix it, ${RESTART_MANAGER}.` };
    const unset = unsetKeyVars(u.envKeys, host.parentEnv, summary, (m) => `pi's models.json reads its key from ${m}, which is not set.`);
    if (unset) return unset;
    if (!u.models && !u.login && !keys.length)
      return {
        ready: false,
        summary,
        problem: `pi has no provider here (no models.json or auth.json in ${u.dir}, no provider key variable).`,
        remedy: `Run \`pi\` and /login as this user, export a provider's key (e.g. ANTHROPIC_API_KEY), or name a provider in ${u.dir}/models.json, ${RESTART_MANAGER}.`,
      };
    return { ready: true, summary };
  },

  buildRun: buildPiRun,
  parseRun: piRunResultOf,
  buildSeat: buildPiSeat,
  ...screenReaders({ input: INPUT_SCREEN, blocking: BLOCKING, authFailure: AUTH_FAILURE }),
  setup: setupPi,
  writeLaunchFiles: writePiLaunchFiles,
  spawn: spawnPi,
} as const satisfies RuntimeAdapter;

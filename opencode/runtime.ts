// The OpenCode adapter behind the runtime seam (runtime/adapter.ts, docs/runtimes.md).
import { PROVIDER_KEY_VARS, readUserOpencodeConfig } from "./home.js";
import { buildOpencodeRun, buildOpencodeSeat, spawnOpencode, writeOpencodeLaunchFiles } from "./launch.js";
import { opencodeRunResultOf } from "./run-result.js";
import { setupOpencode } from "./setup.js";
import { MANAGER_WAKE_PROMPT, RESTART_MANAGER, screenReaders, type BlockingScreen, type RuntimeAdapter } from "../runtime/index.js";

/** The TUI's input footer (1.18.33), and the screens that stop an unattended start. */
const INPUT_SCREEN = /ctrl\+p commands/;
const BLOCKING: readonly BlockingScreen[] = [
  { name: "a permission prompt", pattern: /Permission required|Allow once|Allow always/ },
  { name: "the provider login", pattern: /Select provider|Connect a provider/ },
];
const AUTH_FAILURE = /invalid x-api-key|authentication_error|Unauthorized|API key is missing|ProviderAuthError/i;

export const opencodeRuntime = {
  name: "opencode",
  label: "OpenCode",
  command: "opencode",
  binEnv: "COTAL_OPENCODE_BIN",
  installHint: `Install opencode-ai where the manager runs (or set COTAL_OPENCODE_BIN), ${RESTART_MANAGER}.`,
  // OpenCode's session store is not a file Node reads: its plugin writes the records itself (journal.ts).
  connector: { meta: "opencode" },
  capabilities: {
    mailHook: true,
    preToolUse: "all",
    notificationHook: true,
    stopFailureHook: true,
    denyFloor: "cli",
    terminalWake: true,
    headlessRun: true,
    runCost: "usd",
    jsonSchema: false,
    carry: false,
    eventPlane: true,
    approvals: false,
  },
  wakePrompt: MANAGER_WAKE_PROMPT,
  // Its TUI (a large Bun bundle) took 45-60 s to draw its input screen on a loaded 2-core host (1.18.33).
  screenTimeoutMs: 180_000,
  // A wake typed while a first prompt's hooks still run (its TUI shows the home screen meanwhile)
  // starts a second OpenCode session: seen under load with 15 s, so a lost wake is retried later.
  rewakeAfterMs: 60_000,

  shellEnv(env) {
    const u = readUserOpencodeConfig(env);
    const out: Record<string, string> = {};
    const names = [
      "XDG_CONFIG_HOME",
      "XDG_DATA_HOME",
      "OPENCODE_CONFIG",
      "OPENCODE_DISABLE_MODELS_FETCH",
      "OPENCODE_MODELS_PATH",
      ...PROVIDER_KEY_VARS,
      ...u.envKeys,
    ];
    for (const k of names) if (env[k] !== undefined) out[k] = env[k];
    return out;
  },

  auth(host) {
    const u = readUserOpencodeConfig(host.parentEnv);
    const keys = [...new Set([...u.envKeys, ...PROVIDER_KEY_VARS])].filter((k) => !!host.parentEnv[k]); // an empty variable is no key
    const summary = [
      u.config ? `config ${u.config}${u.model ? ` (model ${u.model})` : ""}` : `no opencode.json in ${u.dir}`,
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
        problem: `The OpenCode config reads ${missing.join(", ")} ({env:…}), which is not set.`,
        remedy: `Export ${missing.join(", ")} where the manager runs, then restart it.`,
      };
    if (!u.config && !u.login && !keys.length)
      return {
        ready: false,
        summary,
        problem: `OpenCode has no provider here (no opencode.json in ${u.dir}, no login, no provider key variable).`,
        remedy: `Run \`opencode auth login\` as this user, or name a provider in ~/.config/opencode/opencode.json, ${RESTART_MANAGER}.`,
      };
    return { ready: true, summary };
  },

  buildRun: buildOpencodeRun,
  parseRun: opencodeRunResultOf,
  buildSeat: buildOpencodeSeat,
  ...screenReaders({ input: INPUT_SCREEN, blocking: BLOCKING, authFailure: AUTH_FAILURE }),
  setup: setupOpencode,
  writeLaunchFiles: writeOpencodeLaunchFiles,
  spawn: spawnOpencode,
} as const satisfies RuntimeAdapter;

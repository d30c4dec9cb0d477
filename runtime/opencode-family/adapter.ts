// What an OpenCode-family adapter supplies behind the runtime seam (runtime/adapter.ts,
// docs/runtimes.md), the same for each member but for its names (family.ts): the background
// manager's environment, the auth pre-flight, runs, seats, screens, setup and the private home.
// The capabilities are what this shared code keeps (the plugin's hooks, the posture's floor, the
// journal, the run parser): the same for each member. The adapter adds its identity (name, label,
// command, executable variable, install hint, its connector's card meta).
import type { RuntimeAdapter } from "../adapter.js";
import { RESTART_MANAGER } from "../restart-hint.js";
import { configSummary, keysSet, unsetKeyVars } from "../config-auth.js";
import { screenReaders, type BlockingScreen } from "../screen.js";
import { MANAGER_WAKE_PROMPT } from "../wake.js";
import type { OpencodeFamily } from "./family.js";
import { buildRun, buildSeat, spawnLaunch, writeLaunchFiles } from "./launch.js";
import { runResultOf } from "./run-result.js";
import { setupOpencodeFamily } from "./setup.js";
import { readUserOpencodeConfig, userConfigFiles } from "./user-config.js";

/** The TUI's input footer (OpenCode 1.18.33, Kilo Code 7.7.7), and the screens that stop an unattended start. */
const INPUT_SCREEN = /ctrl\+p commands/;
const BLOCKING: readonly BlockingScreen[] = [
  { name: "a permission prompt", pattern: /Permission required|Allow once|Allow always/ },
  { name: "the provider login", pattern: /Select provider|Connect a provider/ },
];
const AUTH_FAILURE = /invalid x-api-key|authentication_error|Unauthorized|API key is missing|ProviderAuthError/i;

/** The members an adapter of the family shares. */
export type OpencodeFamilyMembers = Omit<
  RuntimeAdapter,
  "name" | "label" | "command" | "binEnv" | "installHint" | "connector" | "plugin" | "sessions" | "authModes" | "submitDelayMs"
>;

/** The seam's members for the family CLI `d` describes (its runs built at once, not awaited). */
export function opencodeFamilyRuntime(d: OpencodeFamily) {
  const primary = d.editedFiles.find((f) => f.endsWith(".json")) ?? d.editedFiles[0]!;
  return {
    capabilities: {
      mailHook: true,
      preToolUse: "all",
      notificationHook: true,
      stopFailureHook: true,
      denyFloor: "cli",
      terminalWake: true,
      headlessRun: true,
      runCost: "usd",
      // `<cli> run` has no schema option.
      jsonSchema: false,
      carry: false,
      eventPlane: true,
      // The plugin's permission event carries no decision back.
      approvals: false,
    },
    wakePrompt: MANAGER_WAKE_PROMPT,
    // Its TUI (a large Bun bundle) took 45-60 s to draw its input screen on a loaded 2-core host (OpenCode 1.18.33).
    screenTimeoutMs: 180_000,
    // A wake typed while a first prompt's hooks still run (its TUI shows the home screen meanwhile)
    // starts a second session: seen under load with 15 s (OpenCode), so a lost wake is retried later.
    rewakeAfterMs: 60_000,

    shellEnv(env) {
      const u = readUserOpencodeConfig(d, env);
      const out: Record<string, string> = {};
      const names = ["XDG_CONFIG_HOME", "XDG_DATA_HOME", d.env.config, ...d.switches, ...d.providerKeyVars, ...u.envKeys];
      for (const k of names) if (env[k] !== undefined) out[k] = env[k];
      return out;
    },

    auth(host) {
      const u = readUserOpencodeConfig(d, host.parentEnv);
      const files = userConfigFiles(u);
      const keys = keysSet([...u.envKeys, ...d.providerKeyVars], host.parentEnv);
      const summary = configSummary(
        [files.length ? `config ${files.join(", ")}${u.model ? ` (model ${u.model})` : ""}` : `no ${primary} in ${u.dir}`],
        u.login,
        keys,
      );
      const unset = unsetKeyVars(u.envKeys, host.parentEnv, summary, (m) => `The ${d.label} config reads ${m} ({env:…}), which is not set.`);
      if (unset) return unset;
      if (!files.length && !u.login && !keys.length)
        return {
          ready: false,
          summary,
          problem: `${d.label} has no provider here (no ${primary} in ${u.dir}, no login, no provider key variable).`,
          remedy: `Run \`${d.command} auth login\` as this user, or name a provider in ~/.config/${d.app}/${primary}, ${RESTART_MANAGER}.`,
        };
      return { ready: true, summary };
    },

    buildRun: (host, input) => buildRun(d, host, input),
    parseRun: (spec, exit) => runResultOf(d.label, spec, exit),
    buildSeat: (host, seat) => buildSeat(d, host, seat),
    ...screenReaders({ input: INPUT_SCREEN, blocking: BLOCKING, authFailure: AUTH_FAILURE }),
    setup: (o) => setupOpencodeFamily(d, o),
    writeLaunchFiles: (launch) => writeLaunchFiles(d, launch),
    spawn: (launch, opts) => spawnLaunch(d, launch, opts),
  } satisfies OpencodeFamilyMembers;
}

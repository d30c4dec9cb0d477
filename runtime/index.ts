/**
 * The runtime seam: the interface every agent CLI adapter implements (adapter.ts) and what the
 * kernel hands it. Its own floor (it depends on schemas only): the adapters (claude/, codex/)
 * sit above it, the registry (runtimes/index.ts) and the kernel above them. What adapters share
 * beyond the helpers here is here too: the OpenCode family (opencode-family/), for opencode/ and
 * kilo/.
 */
export type {
  AllowRulePlan,
  AuthDetail,
  ConnectorFacet,
  Env,
  PermissionDecision,
  PluginFacet,
  SeatApprovals,
  SessionCandidate,
  SessionFile,
  SessionStore,
  TranscriptReader,
  LaunchedRuntime,
  LaunchFile,
  RunExit,
  RunLaunchInput,
  RunSpecView,
  RuntimeAdapter,
  RuntimeAuth,
  RuntimeCapabilities,
  RuntimeHost,
  RuntimeLaunch,
  RuntimeSetupReport,
  ScreenState,
  SeatLaunchInput,
  SpawnOptions,
} from "./adapter.js";
export { removePrivateDir, writePrivateFiles, type PrivateDirRules } from "./private-files.js";
export { findCli } from "./find-cli.js";
export { failedRun, runBase, timeoutMessage, unfinishedRun, type RunReading } from "./run-result.js";
export { jsonObjectLines } from "./json-lines.js";
export { MANAGER_WAKE_PROMPT, WAKE_EVERY_MS, wakeDue } from "./wake.js";
export { DENY_FLOOR_COMMANDS, DENY_FLOOR_HOOK_FLAG, floorRuleFor } from "./deny-floor.js";
export { RUNTIME_ENV } from "./runtime-env.js";
export { FLAT_CONTEXT_HOOK_FLAG, permissionRequestReply, withFlatContext } from "./hook-answer.js";
export { contextOf, relayHook, type HookCommand } from "./hook-relay.js";
export { runRefusal, type KernelRefusal } from "./kernel-refusals.js";
export { jsonObjectOf, readJsonObjectFile } from "./json-object.js";
export { RESTART_MANAGER } from "./restart-hint.js";
export { screenReaders, type BlockingScreen } from "./screen.js";
export { spawnWithPrivateDir } from "./spawn-launch.js";
export { privateLaunchDir } from "./launch-dir.js";
export { allowListedEnv, BASE_ENV_NAMES } from "./launch-env.js";
export { connectorCommand, CONNECTOR_NODE_FLAGS, COTAL_MCP_SERVER, hookEntryOf } from "./connector-entry.js";
export { parseStartTime, processStartTime, statFields } from "./process-stat.js";
export { sha256File } from "./file-digest.js";
export type { LaunchCommon } from "./launch-common.js";
export type { TranscriptRecord } from "./transcript-record.js";
export { applySetupFile, setupAction, type SetupAction } from "./setup-file.js";
export { COMMON_PROVIDER_KEY_VARS, cotalPluginFor, opencodeFamilyRuntime, type OpencodeFamily } from "./opencode-family/index.js";
export { configSummary, keysSet, unsetKeyVars } from "./config-auth.js";

/**
 * The Claude binding: the one launch builder (argv, env, launch files) for every way Cotal
 * starts Claude, the environment allow-list, the deny floor, persona privacy (private files and
 * the watcher that removes them), and agent files. Its own floor (it depends on schemas only),
 * so the manager, which starts seats, and the connector, which ships the plugin, both use it.
 */
export { buildClaudeLaunch, PLUGIN_ALLOW_RULE, type ClaudeLaunch, type ClaudeLaunchInput, type LaunchFile } from "./launch-builder.js";
export { DENY_FLOOR } from "./deny-floor.js";
export { normaliseOptionKey, type LaunchOptionValue, type PermissionMode } from "./launch-options.js";
export { buildClaudeEnv, claudeShellEnv, isAllowedEnvName, ALWAYS_DROPPED, type ClaudeEnvInput } from "./env-allowlist.js";
export { ClaudeAuthChoice, ClaudeAuthMode, describeClaudeAuth, detectClaudeAuth, loginFile, resolveClaudeAuth } from "./auth.js";
export { launchClaude, writeLaunchFiles, type LaunchClaudeOptions, type LaunchedClaude } from "./persona.js";
export { processGone, startPersonaWatcher, type PersonaWatcherOptions } from "./persona-watcher.js";
export { applyAllowRule, claudeUserSettingsPath, ClaudeSettingsError, planAllowRule, type AllowRulePlan } from "./allow-rule.js";
export { claudeRuntime, type ClaudeHostSettings } from "./runtime.js";
export { runResultOf } from "./run-result.js";
export { BypassAsRootError, claudeLaunchError, LaunchOptionError } from "./errors.js";
export { authFailureOnScreen, classifyScreen, seedSeatConfig, type BlockingScreen, type SeatConfigInput } from "./seat-config.js";
export {
  carriedResume,
  claudeConfigDir,
  findSession,
  listSessions,
  sessionsNamed,
  SessionLookupError,
  TranscriptMismatchError,
  type SessionCandidate,
  type SessionFile,
} from "./transcripts.js";

/**
 * The Claude binding: the one launch builder (argv, env, launch files) for every way Cotal
 * starts Claude, the environment allow-list, the deny floor, persona privacy (private files and
 * the watcher that removes them), and agent files.
 */
export {
  buildClaudeLaunch,
  ClaudeProfile,
  COTAL_ALLOW_RULE,
  PLUGIN_ALLOW_RULE,
  COTAL_MCP_SERVER,
  CONNECTOR_NODE_FLAGS,
  LAUNCH_MATERIAL_ENV,
  type ClaudeLaunch,
  type ClaudeLaunchInput,
  type LaunchFile,
} from "./launch-builder.js";
export { DENY_FLOOR } from "./deny-floor.js";
export {
  normaliseOptionKey,
  PASS_THROUGH_OPTIONS,
  PERMISSION_MODES,
  RESERVED_OPTIONS,
  validateLaunchOptions,
  type LaunchOptionValue,
  type PermissionMode,
} from "./launch-options.js";
export { AuthMode, buildClaudeEnv, isAllowedEnvName, ALWAYS_DROPPED, type ClaudeEnvInput } from "./env-allowlist.js";
export { launchClaude, removePrivateDir, writeLaunchFiles, type LaunchClaudeOptions, type LaunchedClaude } from "./persona.js";
export { PRIVATE_DIR_PREFIX, processGone, readProcessStart, startPersonaWatcher, type PersonaWatcherOptions } from "./persona-watcher.js";
export { applyAllowRule, claudeUserSettingsPath, ClaudeSettingsError, planAllowRule, type AllowRulePlan } from "./allow-rule.js";
export { agentFilePath, loadAgentFile, parseAgentFile, type AgentFile } from "./agent-file.js";
export { AgentFileError, BypassAsRootError, ClaudeLaunchError, LaunchOptionError } from "./errors.js";
export {
  MARKETPLACE_MANIFEST,
  MARKETPLACE_PLUGIN_PATH,
  packageInfo,
  PLUGIN_BIN_DIR,
  PLUGIN_BUNDLES,
  PLUGIN_ID,
  PLUGIN_MARKETPLACE,
  PLUGIN_NAME,
  PLUGIN_TOOL_PREFIX,
  pluginHookCommand,
  renderMarketplace,
  renderPlugin,
  type PluginPackageInfo,
} from "./plugin.js";
export {
  CLAUDE_BIN_ENV,
  ensurePluginInstalled,
  findClaudeCli,
  inspectPluginInstall,
  installCommandText,
  listMarketplaces,
  listPlugins,
  marketplaceAddArgs,
  pluginDirCommandText,
  pluginEnableCommandText,
  PluginInstallError,
  pluginInstallArgs,
  PluginScope,
  pluginUpdateArgs,
  runClaudeCli,
  type ClaudeCliLookup,
  type ClaudeCliOptions,
  type ClaudeCliResult,
  type ListedMarketplace,
  type ListedPlugin,
  type PluginInstallActions,
  type PluginInstallState,
  type PluginInstallTarget,
} from "./plugin-install.js";

/**
 * The Claude Code plugin (rendered from the connector's hook registry) and its install, for
 * `cotal setup`; with the Claude binding re-exported, so the connector has one entry for both.
 */
export * from "../../claude/index.js";
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

/** Connector: the seat runtime (MCP server, hook relay, bounded inbox, wake, presence from hooks). */
export * from "./errors.js";
export * from "./launch.js";
export * from "./paths.js";
export * from "./protocol.js";
export * from "./framing.js";
export * from "./inbox.js";
export * from "./hooks.js";
export * from "./presence.js";
export * from "./wake.js";
export * from "./hook-socket.js";
export * from "./hook.js";
export * from "./written-reply.js";
export * from "./config.js";
export * from "./connector.js";
export { plural, receiptLine } from "./model-text.js";
export * from "./tools.js";
export * from "./run.js";
export { VERSION as CONNECTOR_VERSION } from "./version.js";
// The Claude plugin and its install, for `cotal setup` (claude command lines are built only in claude/ and the plugin installer).
export {
  applyAllowRule,
  claudeUserSettingsPath,
  ClaudeSettingsError,
  planAllowRule,
  PLUGIN_ALLOW_RULE,
  type AllowRulePlan,
  ensurePluginInstalled,
  findClaudeCli,
  inspectPluginInstall,
  installCommandText,
  MARKETPLACE_MANIFEST,
  MARKETPLACE_PLUGIN_PATH,
  PLUGIN_BIN_DIR,
  PLUGIN_BUNDLES,
  PLUGIN_ID,
  PLUGIN_MARKETPLACE,
  PLUGIN_TOOL_PREFIX,
  pluginDirCommandText,
  pluginEnableCommandText,
  PluginInstallError,
  PluginScope,
  renderMarketplace,
  renderPlugin,
  type PluginInstallActions,
  type PluginInstallState,
} from "./claude/index.js";
export * from "./agui.js";
export * from "./event-wal.js";
export * from "./event-plane.js";

/**
 * Connector: the public entry of the connector that runs inside every agent session. It starts from its own bundles
 * (mcp-main.ts, hook-main.ts); other components use the hook client (`cotal hook`), the receipt
 * line (`cotal send`), and the Claude Code plugin with its installer (`cotal setup`, `cotal
 * manager`). Tests and benches that drive the runtime itself use ./internal.js.
 */
export { runHook } from "./hook.js";
export { receiptLine } from "./model-text.js";
// The Claude plugin and its install, for `cotal setup` (claude command lines are built only in claude/ and the plugin installer).
export {
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

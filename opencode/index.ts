/**
 * The OpenCode binding (docs/runtimes.md): the adapter object the registry lists, and what tests
 * and `cotal setup --runtime opencode` need of it. Its own floor (it depends on the seam and
 * schemas only). Its plugin (plugin.ts) is bundled on its own into the plugin's bin/.
 */
export { opencodeRuntime } from "./runtime.js";
export { opencodeLaunchError } from "./errors.js";
export { opencodeRunResultOf } from "./run-result.js";
export { buildOpencodeEnv, OPENCODE_DIR_PREFIX, pluginEntryOf, pluginSdkInstalledFiles } from "./launch.js";
export { askRulesOf, readUserOpencodeConfig, userConfigDir, type UserOpencodeConfig } from "./home.js";
export { allowRuleOf, postureRules, COTAL_AGENT, POSTURE_NAME } from "./posture.js";
export { PLUGIN_HOOKS } from "./plugin-hooks.js";
export { setupOpencode } from "./setup.js";

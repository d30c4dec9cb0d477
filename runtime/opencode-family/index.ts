/**
 * The OpenCode family (family.ts): what OpenCode and the CLIs forked from it (Kilo Code) share
 * behind the seam, for their adapters (opencode/, kilo/), which never import each other. Reached
 * through runtime/index.ts.
 */
export { COMMON_PROVIDER_KEY_VARS, type OpencodeFamily } from "./family.js";
export { opencodeFamilyRuntime, type OpencodeFamilyMembers } from "./adapter.js";
export { askRulesOf, readUserOpencodeConfig, type AskRule, type UserOpencodeConfig } from "./user-config.js";
export { allowRuleOf, postureRules, type PermissionRules } from "./posture.js";
export { pluginSdkInstalledFiles, privateDirPrefix } from "./launch.js";
export { cotalPluginFor, type CotalPluginOptions } from "./plugin.js";
export { SessionJournal, type OpencodeEvent } from "./journal.js";
export { PLUGIN_HOOKS } from "./plugin-hooks.js";

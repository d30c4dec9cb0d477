// OpenCode as a member of the OpenCode family (runtime/opencode-family/): its names. OpenCode
// 1.18.33 never writes into the config files it reads, so the user's file is named where it is.
import { COMMON_PROVIDER_KEY_VARS, type OpencodeFamily } from "../runtime/index.js";
import { opencodeLaunchError } from "./errors.js";

export const OPENCODE: OpencodeFamily = {
  runtime: "opencode",
  label: "OpenCode",
  command: "opencode",
  app: "opencode",
  configFiles: ["opencode.json", "opencode.jsonc"],
  editedFiles: ["opencode.json", "opencode.jsonc"],
  env: { config: "OPENCODE_CONFIG", configDir: "OPENCODE_CONFIG_DIR", disableAutoupdate: "OPENCODE_DISABLE_AUTOUPDATE" },
  schema: "https://opencode.ai/config.json",
  pluginSdk: { name: "@opencode-ai/plugin", version: "1.18.33" },
  pluginBundle: "opencode-plugin.mjs",
  switches: ["OPENCODE_DISABLE_MODELS_FETCH", "OPENCODE_MODELS_PATH", "OPENCODE_MODELS_URL", "OPENCODE_DISABLE_LSP_DOWNLOAD"],
  providerKeyVars: [...COMMON_PROVIDER_KEY_VARS, "OPENCODE_API_KEY"],
  moreAsks: [],
  userConfig: "in-place",
  layer: {},
  seeds: [],
  fail: opencodeLaunchError,
};

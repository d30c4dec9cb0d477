// Kilo Code as a member of the OpenCode family (runtime/opencode-family/): its names, and what it
// does beyond OpenCode, each seen on 7.7.7:
// - it merges every config file of its global folder (`~/.config/kilo`: config.json, kilo.json,
//   kilo.jsonc, opencode.json, opencode.jsonc), and writes `$schema` into each config file it
//   loads that lacks one: a launch reads copies of the user's files, never the files themselves;
// - a first start migrates the global files (`permission.bash: allow` for an existing user) unless
//   `.bash-permission-migrated` is there: the private folder has it, so the copies are read as
//   the user wrote them;
// - `"snapshot": false` in Cotal's layer: otherwise `kilo run` stopped on "Initializing snapshot…",
//   a question nobody answers;
// - its defaults also ask before recalling past sessions and its memory (`recall`,
//   `kilo_memory_recall`, `kilo_memory_save`), and before most shell commands (`bash` by pattern:
//   refused at once unattended, by the plugin or `kilo run`).
import { COMMON_PROVIDER_KEY_VARS, type OpencodeFamily } from "../runtime/index.js";
import { kiloLaunchError } from "./errors.js";

export const KILO: OpencodeFamily = {
  runtime: "kilo",
  label: "Kilo Code",
  command: "kilo",
  app: "kilo",
  configFiles: ["config.json", "kilo.json", "kilo.jsonc", "opencode.json", "opencode.jsonc"],
  editedFiles: ["kilo.jsonc", "kilo.json", "opencode.jsonc", "opencode.json", "config.json"],
  env: { config: "KILO_CONFIG", configDir: "KILO_CONFIG_DIR", disableAutoupdate: "KILO_DISABLE_AUTOUPDATE" },
  schema: "https://app.kilo.ai/config.json",
  pluginSdk: { name: "@kilocode/plugin", version: "7.7.7" },
  pluginBundle: "kilo-plugin.mjs",
  switches: ["KILO_DISABLE_MODELS_FETCH", "KILO_MODELS_PATH", "KILO_MODELS_URL", "KILO_DISABLE_LSP_DOWNLOAD", "KILO_TELEMETRY_LEVEL"],
  providerKeyVars: [...COMMON_PROVIDER_KEY_VARS, "KILO_API_KEY"],
  moreAsks: ["recall", "kilo_memory_recall", "kilo_memory_save"],
  userConfig: "copied",
  layer: { snapshot: false },
  seeds: [".bash-permission-migrated"],
  fail: kiloLaunchError,
};

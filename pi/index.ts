/**
 * The pi binding (docs/runtimes.md): the adapter object the registry lists, and what tests and
 * `cotal setup --runtime pi` need of it. Its own floor (it depends on the seam and schemas only).
 * Its extension (extension.ts) is bundled on its own into the plugin's bin/.
 */
export { piRuntime } from "./runtime.js";
export { piLaunchError } from "./errors.js";
export { piRunResultOf } from "./run-result.js";
export { extensionEntryOf, PI_DIR_PREFIX } from "./launch.js";
export { readUserPiConfig, userPiDir, type UserPiConfig } from "./home.js";
export { postureOf, refusalOf, POSTURE_NAME, type PiPosture } from "./posture.js";
export { journalRecords } from "./journal.js";
export { EXTENSION_HOOKS, MODE_ENV } from "./extension-env.js";
export { setupPi } from "./setup.js";

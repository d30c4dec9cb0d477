/**
 * The Codex binding (docs/runtimes.md): the adapter object the registry lists, and what tests
 * and `cotal setup --runtime codex` need of it. Its own floor (it depends on the seam and schemas only).
 */
export { codexRuntime } from "./runtime.js";
export { codexLaunchError } from "./errors.js";
export { codexRunResultOf } from "./run-result.js";
export { buildCodexEnv } from "./env-allowlist.js";
export { readUserCodexConfig, renderLayer, userCodexHome, COTAL_PROFILE, type UserCodexConfig } from "./home.js";
export { CODEX_DIR_PREFIX } from "./launch.js";
export { setupCodex } from "./setup.js";
export { codexTranscriptRecords, listRollouts } from "./transcript.js";

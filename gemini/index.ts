/**
 * The Gemini CLI binding (docs/runtimes.md): the adapter object the registry lists, and what tests
 * and `cotal setup --runtime gemini` need of it. Its own floor (it depends on the seam and schemas only).
 */
export { geminiRuntime } from "./runtime.js";
export { geminiLaunchError } from "./errors.js";
export { geminiRunResultOf } from "./run-result.js";
export { buildGeminiEnv, cotalHooks, GEMINI_DIR_PREFIX, GEMINI_HOOKS, GEMINI_RUNTIME_NAME } from "./launch.js";
export { authProblem, effectiveAuthType, readUserGeminiConfig, userGeminiDir, type UserGeminiConfig } from "./home.js";
export { allowRulesOf, DEFAULT_ASKS, floorRegexes, postureRules, renderPolicy, MCP_NAME, POSTURE_NAME } from "./posture.js";
export { setupGemini } from "./setup.js";
export { geminiTranscriptRecords } from "./transcript.js";

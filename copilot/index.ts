/**
 * The GitHub Copilot CLI binding (docs/runtimes.md): the adapter object the registry lists, and
 * what tests and `cotal setup --runtime copilot` need of it. Its own floor (it depends on the seam
 * and schemas only).
 */
export { copilotRuntime } from "./runtime.js";
export { copilotLaunchError } from "./errors.js";
export { copilotRunResultOf } from "./run-result.js";
export { COPILOT_DIR_PREFIX, COPILOT_HOOKS, hooksFile } from "./launch.js";
export { readUserCopilotConfig, userCopilotDir, type UserCopilotConfig } from "./home.js";
export { postureArgs, MCP_NAME, POSTURE_NAME } from "./posture.js";
export { setupCopilot } from "./setup.js";
export { copilotTranscriptRecords } from "./transcript.js";

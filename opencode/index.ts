/**
 * The OpenCode binding (docs/runtimes.md): the adapter object the registry lists, and what tests
 * need of it. Its own floor (it depends on the seam and schemas only); what it shares with its
 * forks is the seam's OpenCode family (runtime/opencode-family/). Its plugin (plugin.ts) is
 * bundled on its own into the plugin's bin/.
 */
export { opencodeRuntime } from "./runtime.js";
export { opencodeLaunchError } from "./errors.js";
export { OPENCODE } from "./family.js";

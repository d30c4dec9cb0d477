/**
 * The Kilo Code binding (docs/runtimes.md): the adapter object the registry lists, and what tests
 * need of it. Its own floor (it depends on the seam and schemas only): Kilo Code is an OpenCode
 * fork, and what it shares with OpenCode is the seam's OpenCode family (runtime/opencode-family/),
 * never opencode/. Its plugin (plugin.ts) is bundled on its own into the plugin's bin/.
 */
export { kiloRuntime } from "./runtime.js";
export { kiloLaunchError } from "./errors.js";
export { KILO } from "./family.js";

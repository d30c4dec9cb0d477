// The destructive-command deny floor as Claude permission rules, passed with `--disallowedTools`
// in every profile and mode. Deny rules win over allow rules and over bypassPermissions, so a
// launch option cannot lift them. The commands themselves are the seam's (runtime/deny-floor.ts),
// shared with every runtime; rule syntax verified on the real CLI 2.1.332 (docs/claude-binding.md).
import { DENY_FLOOR_COMMANDS } from "../runtime/index.js";

/** The deny floor, in a stable order. */
export const DENY_FLOOR: readonly string[] = Object.freeze(DENY_FLOOR_COMMANDS.map((pattern) => `Bash(${pattern})`));

/**
 * The variable that names, to a connector its agent CLI started by hand, which CLI that is
 * (`claude`, `codex`): the setup that puts the connector into the CLI's configuration sets it in
 * the MCP server's environment. A seat the manager launched has it in its launch material
 * (`runtime`), which wins. It sets the card's `runtime` and which session file the plane reads.
 */
export const RUNTIME_ENV = "COTAL_RUNTIME";

// How an agent CLI starts Cotal's connector and its hook command, the same for every runtime: the
// bundles ship side by side in the plugin's bin/ (connector.mjs, hook.mjs), run by this Node.
import path from "node:path";

/** The MCP server name every runtime gives the connector (Claude: its tools are `mcp__cotal__*`). */
export const COTAL_MCP_SERVER = "cotal";
/** Node flags the connector entry is started with (it is small and long-lived). */
export const CONNECTOR_NODE_FLAGS: readonly string[] = ["--optimize-for-size", "--max-semi-space-size=1"];

/** The connector as the CLI starts it (its MCP server over stdio). */
export const connectorCommand = (connectorEntry: string): { command: string; args: string[] } => ({
  command: process.execPath,
  args: [...CONNECTOR_NODE_FLAGS, connectorEntry],
});

/** The connector's hook bundle beside its MCP entry. */
export const hookEntryOf = (connectorEntry: string): string => path.join(path.dirname(connectorEntry), "hook.mjs");

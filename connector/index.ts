/** Connector: the seat runtime (MCP server, hook relay, inbox, event plane). */
export {};

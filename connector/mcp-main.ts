// Entry of the bundled MCP stdio server (dist/connector.mjs). Filled in by the connector work.
console.error("cotal connector: not built yet");
process.exitCode = 1;

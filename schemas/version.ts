import pkg from "../package.json" with { type: "json" };

/**
 * The version of this Cotal implementation (package.json, inlined at build time): what the cli
 * prints, the connector's MCP server reports and the plugin install records. Not the wire
 * protocol's version, which is COTAL_PROTOCOL_VERSION.
 */
export const COTAL_VERSION: string = pkg.version;

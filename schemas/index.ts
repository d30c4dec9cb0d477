/** Cotal wire types (zod), subject builders and parsers: the contract every component speaks. */
export * from "./errors.js";
export * from "./tokens.js";
export * from "./principal.js";
export * from "./subjects.js";
export * from "./durables.js";
export * from "./limits.js";
export * from "./duration.js";
export * from "./message.js";
export * from "./presence.js";
export * from "./channel.js";
export * from "./control.js";
export * from "./control-commands.js";
export * from "./launch-material.js";
export * from "./seat-log.js";
export * from "./agent-file.js";
export * from "./json-schema.js";
export * from "./subject-patterns.js";

/**
 * Cotal wire types (zod), subject builders and parsers: the contract every component speaks, and
 * the public surface of this folder as a whole (a type unused inside Cotal is still part of the
 * contract a client in TypeScript may use). The JSON Schema export of the contract (tooling for
 * docs/schema/) is in ./internal.js.
 */
export * from "./errors.js";
export * from "./tokens.js";
export * from "./terminal-safe.js";
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
export * from "./terminal-host.js";
export * from "./seat-log.js";
export * from "./agent-file.js";
export * from "./subject-patterns.js";
export * from "./manager-commands.js";
export * from "./runs.js";
export * from "./events.js";
export * from "./frame-fold.js";
export * from "./carry.js";
export * from "./spawn.js";
export * from "./team-file.js";
export * from "./version.js";
export * from "./article.js";
export * from "./approvals.js";

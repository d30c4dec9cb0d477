/** Manager: spawns, supervises and fences seats. */
export * from "./errors.js";
export * from "./lifecycle-uid.js";
export * from "./seat-log.js";
export * from "./seat-table.js";

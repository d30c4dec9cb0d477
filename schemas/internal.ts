/**
 * The contract's internal entry: the public entry, and the JSON Schema rendering of every wire
 * type that `npm run schema:export` writes to docs/schema/ (and a test keeps in step).
 */
export * from "./index.js";
export * from "./json-schema.js";

/**
 * The connector's internal entry (nats.js `internal_mod.ts`): the public entry and the modules
 * behind it that tests pin directly (pure policy, the words the model reads). Components import
 * ./index.js; test/architecture enforces it.
 */
export * from "./index.js";
export { seatClassifier } from "./classify.js";
export { BacklogLatch } from "./backlog.js";
export { LineSplitter } from "./ndjson.js";
export * from "./model-text.js";

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
export { cliFacetOf } from "./cli-facet.js";

// The modules behind the public entry, as the entry exported them before it was curated.
export * from "./errors.js";
export * from "./launch.js";
export * from "./paths.js";
export * from "./protocol.js";
export * from "./framing.js";
export * from "./inbox.js";
export * from "./hooks.js";
export * from "./presence.js";
export * from "./wake.js";
export * from "./hook-socket.js";
export * from "./hook.js";
export * from "./written-reply.js";
export * from "./config.js";
export * from "./connector.js";
export * from "./tools.js";
export * from "./run.js";
export * from "./agui.js";
export * from "./event-wal.js";
export * from "./event-plane.js";
export * from "./approvals.js";

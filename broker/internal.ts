/**
 * The broker's internal entry (nats.js `internal_mod.ts`): everything the public entry lists, and
 * the modules behind it, for tests and benches that pin internals (timing constants, pure policy,
 * raw control requests). Components import ./index.js instead; test/architecture enforces it.
 */
export * from "./index.js";
export * from "./log.js";
export * from "./log-sampler.js";
export { BEAT_GAP_MS, MAX_BEAT_BYTES } from "./liveness.js";
export * from "./errors.js";
export * from "./js-errors.js";
export * from "./nats-binary.js";
export * from "./connect.js";
export * from "./js-access.js";
export * from "./provision.js";
export * from "./control.js";
export * from "./mesh-service.js";
export * from "./delivery.js";
export * from "./roster.js";
export * from "./channel-registry.js";
export * from "./history.js";
export * from "./artifacts.js";
export * from "./stream-scan.js";
export * from "./verify.js";
export * from "./endpoint.js";
export * from "./durable-reader.js";
export * from "./presence-state.js";
export * from "./auth/index.js";
export * from "./auth/native-nkeys.js";
export * from "./xfer.js";
export * from "./xfer-upload.js";
export * from "./xfer-receive.js";
export * from "./snapshot.js";
export * from "./auth/backup-creds.js";
export * from "./auth/space-identity.js";
export * from "./lock-file.js";
export * from "./bounded-set.js";
export * from "./watch-watermark.js";
export * from "./quiet-pull.js";
export * from "./pulled-msg.js";

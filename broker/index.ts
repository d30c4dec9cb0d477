/** Broker: nats-server process, provisioning, auth and the endpoint client. */
export * from "./log.js";
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
export * from "./verify.js";
export * from "./endpoint.js";
export * from "./auth/index.js";

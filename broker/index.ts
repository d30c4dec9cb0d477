/** Broker: nats-server process, provisioning, auth and the endpoint client. */
export * from "./log.js";

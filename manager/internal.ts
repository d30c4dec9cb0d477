/**
 * The manager's internal entry (nats.js `internal_mod.ts`): the public entry and the modules
 * behind it (runtimes, seat table, seat log, budget arithmetic, transcript carry), for tests and
 * benches. Components import ./index.js; test/architecture enforces it.
 */
export * from "./index.js";
export * from "./errors.js";
export * from "./lifecycle-uid.js";
export * from "./seat-log.js";
export * from "./seat-table.js";
export * from "./restart-policy.js";
export * from "./launch-material-file.js";
export * from "./echo-agent.js";
export * from "./process-host.js";
export * from "./manager-service.js";
export * from "./seat-start.js";
export * from "./tmux-host.js";
export * from "./budget.js";
export * from "./run.js";
export * from "./runs.js";
export * from "./pty-host.js";
export * from "./seat-terminal.js";
export * from "./prompt-delivery.js";
export * from "./transcript-carry.js";
export * from "./attach.js";
export * from "./runtime-checks.js";
export * from "./host-paths.js";
export * from "./seat-credential.js";
export * from "./helpers.js";

/** Manager: spawns, supervises and fences seats. */
export * from "./errors.js";
export * from "./lifecycle-uid.js";
export * from "./seat-log.js";
export * from "./seat-table.js";
export * from "./launch-material-file.js";
export * from "./echo-agent.js";
export * from "./process-start-time.js";
export * from "./process-runtime.js";
export * from "./manager-service.js";
export * from "./claude-seat.js";
export * from "./tmux-runtime.js";
export * from "./budget.js";
export * from "./run.js";
export * from "./runs.js";
export * from "./pty-runtime.js";
export * from "./seat-terminal.js";

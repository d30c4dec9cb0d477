/**
 * Manager: the public entry of the seat supervisor. The cli starts a ManagerService (with the
 * echo agent as its stand-in seat) and reads launch material and budget caps. Tests and benches
 * that need the runtimes, the seat table or the budget arithmetic use ./internal.js.
 */
export { ManagerService, WAKE_PROMPT } from "./manager-service.js";
export type { ManagerOptions } from "./manager-options.js";
export { SeatRefusedError, StaleSeatLogError } from "./errors.js";
export { ECHO_PROBE_MEDIA_TYPE, EchoProbeReport, runEchoAgent } from "./echo-agent.js";
export { ECHO_SEAT_NODE_FLAGS, echoSeatCommand, runEchoSeat } from "./echo-seat.js";
export { readLaunchMaterial } from "./launch-material-file.js";
export { renewalDueAt, SEAT_CREDS_LIFETIME_MS } from "./seat-credential.js";
export { budgetCaps, type BudgetCaps } from "./budget.js";
export { isOperator } from "./runs.js";
export { PTY_DETACH_KEY } from "./pty-host.js";
export { localAttachCommand, seatScreen, tmuxSocketPath, type AttachableTerminalHost } from "./attach.js";
export { capabilityGaps, findRuntimeCli, hostsOf, refuseUnknownAgent } from "./runtime-checks.js";

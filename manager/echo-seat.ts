import { logger } from "../broker/index.js";
import { runEchoAgent } from "./echo-agent.js";
import { SeatRefusedError } from "./errors.js";
import { readLaunchMaterial } from "./launch-material-file.js";

/**
 * V8 flags an echo seat runs with: a long-lived process that holds little and handles a message
 * now and then. A 1 MiB young generation (V8's default grows to 16 MiB per semi-space) cuts what
 * each of many seats keeps resident. Not `--lite-mode` (interpreter only): it saved ≈ 4 MiB a seat,
 * but 50 seats on two cores answered a round of DMs 2.7–5.7× slower than raw consumers with it and
 * 0.9–1.6× without (docs/performance.md, the round trip's baseline and the seats' flags).
 */
export const ECHO_SEAT_NODE_FLAGS: readonly string[] = ["--max-semi-space-size=1"];

/** The command line that runs the echo seat bundle (`dist/echo-seat.mjs`) with its flags; `execArgv` (the manager's own) come first, so the seat's win. */
export function echoSeatCommand(bundle: string, execPath: string = process.execPath, execArgv: readonly string[] = []): string[] {
  return [execPath, ...execArgv, ...ECHO_SEAT_NODE_FLAGS, bundle];
}

/**
 * An echo seat process: reads the launch material its manager names in COTAL_LAUNCH_MATERIAL,
 * joins, and answers until SIGTERM/SIGINT/SIGHUP. Run by `cotal agent echo` and by the seat's
 * own small bundle (dist/echo-seat.mjs), which loads this and the broker, not the whole CLI.
 */
export async function runEchoSeat(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const file = env.COTAL_LAUNCH_MATERIAL;
  if (!file)
    throw new SeatRefusedError("bad-launch-material", "COTAL_LAUNCH_MATERIAL is not set.", "Seats are started by a manager (`cotal spawn --agent echo`).");
  const material = readLaunchMaterial(file);
  const log = logger("echo", { space: material.space, name: material.name });
  const stop = new Promise((res) => {
    for (const sig of ["SIGTERM", "SIGINT", "SIGHUP"] as const) process.once(sig, res);
  });
  await runEchoAgent(material, log, stop);
}

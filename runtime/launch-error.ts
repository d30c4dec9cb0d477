// The one error an adapter throws for a launch it cannot build as asked (a relative path, a launch
// option or allow rule Cotal does not pass, a persona file that cannot be written…): its code names
// the runtime (`bad-codex-launch`), so a refusal on the wire says whose launch it was.
import { CotalError } from "../schemas/index.js";

export class RuntimeLaunchError extends CotalError {
  constructor(
    /** The runtime whose launch was refused (its registry name). */
    readonly runtime: string,
    message: string,
    options: { remedy?: string; cause?: unknown } = {},
  ) {
    super(`bad-${runtime}-launch`, message, options);
  }
}

/** An adapter's maker of its launch errors: `launchErrorOf("codex")("…")`. */
export const launchErrorOf =
  (runtime: string) =>
  (message: string, options: { remedy?: string; cause?: unknown } = {}): RuntimeLaunchError =>
    new RuntimeLaunchError(runtime, message, options);

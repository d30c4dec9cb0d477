// What a run and a seat have in common when an adapter builds their launch: the seat's fields
// under the run's names (a run is named `run_<id>`, a seat's runtime directory is its seat folder).
import type { RunLaunchInput } from "./adapter.js";

/** One launch, run or seat, as an adapter's launch builder reads it. */
export type LaunchCommon = Pick<RunLaunchInput, "space" | "cwd" | "persona" | "model" | "agent" | "launchOptions" | "allowedTools"> & {
  name: string;
  /** Where the launch's private directory goes. */
  runtimeDir: string;
};

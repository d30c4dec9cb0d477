// `cotal doctor`: the nats-server `cotal up` would start, found as `cotal up` finds it.
import { findNatsServer, MIN_NATS_SERVER, NatsServerNotFoundError, NatsServerTooOldError, natsServerVersion } from "../../broker/index.js";
import { failedWith, pass, type DoctorCheck } from "./check.js";

const ID = "nats-server";
const TITLE = "nats-server";

/** Pass with the binary and its version; fail with the finder's own error (which binaries, why refused, how to get one). */
export function natsServerCheck(env: NodeJS.ProcessEnv = process.env): DoctorCheck {
  const min = `${MIN_NATS_SERVER.major}.${MIN_NATS_SERVER.minor}`;
  try {
    const path = findNatsServer(env);
    return pass(ID, TITLE, `${path} ${natsServerVersion(path)?.text ?? ""} (${min} or newer is needed)`.replace("  ", " "));
  } catch (err) {
    if (err instanceof NatsServerTooOldError || err instanceof NatsServerNotFoundError) return failedWith(ID, TITLE, err, "");
    throw err;
  }
}

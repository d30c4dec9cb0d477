// `cotal doctor`: the nats-server `cotal up` would start, found as `cotal up` finds it.
import {
  findNatsServer,
  isNewerThanTested,
  NatsServerNotFoundError,
  NatsServerTooOldError,
  natsServerVersion,
  NEWEST_TESTED_NATS_SERVER,
  SUPPORTED_NATS_SERVERS,
} from "../../broker/index.js";
import { failedWith, pass, warned, type DoctorCheck } from "./check.js";

const ID = "nats-server";
const TITLE = "nats-server";

/**
 * Pass with the binary and its version; warn when it is newer than the newest Cotal is tested on
 * (it runs: newer servers are not refused); fail with the finder's own error (which binaries, why
 * refused, how to get one).
 */
export function natsServerCheck(env: NodeJS.ProcessEnv = process.env): DoctorCheck {
  try {
    const path = findNatsServer(env);
    const v = natsServerVersion(path);
    const found = `${path} ${v?.text ?? ""}`.trimEnd();
    if (v && isNewerThanTested(v))
      return warned(
        ID,
        TITLE,
        `${found}: newer than the newest Cotal is tested on (${NEWEST_TESTED_NATS_SERVER.major}.${NEWEST_TESTED_NATS_SERVER.minor}); it is used, untested (${SUPPORTED_NATS_SERVERS} are supported).`,
        `Should the mesh misbehave on it, point NATS_SERVER_BIN at a nats-server ${SUPPORTED_NATS_SERVERS} (docs/setup.md "Supported servers").`,
      );
    return pass(ID, TITLE, `${found} (${SUPPORTED_NATS_SERVERS} are supported)`);
  } catch (err) {
    if (err instanceof NatsServerTooOldError || err instanceof NatsServerNotFoundError) return failedWith(ID, TITLE, err, "");
    throw err;
  }
}

// Setup file of the `nats-newest` project: a file of it fails, loudly, unless it runs on the newest
// supported nats-server (nats-newest-setup.ts fetched it; vitest.config.ts points NATS_SERVER_BIN at it).
import { inject } from "vitest";
import { isAtLeast, NEWEST_TESTED_NATS_SERVER } from "../../broker/index.js";
import { natsServerVersion } from "../../testbed/nats-server.js";

const problem = inject("natsNewestProblem");
if (problem) throw new Error(`project nats-newest cannot run: ${problem}`);
const bin = process.env.NATS_SERVER_BIN ?? "";
const v = bin ? natsServerVersion(bin) : undefined;
if (!v || !isAtLeast(v, NEWEST_TESTED_NATS_SERVER))
  throw new Error(
    `project nats-newest must run on nats-server ${NEWEST_TESTED_NATS_SERVER.major}.${NEWEST_TESTED_NATS_SERVER.minor} or newer; NATS_SERVER_BIN=${bin || "(unset)"} is ${v?.text ?? "no nats-server"}`,
  );

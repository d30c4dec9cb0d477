// The echo seat's own bundle (dist/echo-seat.mjs): a seat process that loads the echo agent, the
// broker and the schemas only — not the CLI with its console, web server and commands — so each
// seat starts faster and holds less memory: seats that cost little.
import { logger } from "../broker/index.js";
import { runEchoSeat } from "./echo-seat.js";

runEchoSeat().catch((err: unknown) => {
  logger("echo").error({ err }, "echo seat failed");
  process.exitCode = 1;
});

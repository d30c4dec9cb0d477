import { Command, CommanderError } from "commander";
import { registerChannels } from "./commands/channels.js";
import { registerCompletion } from "./commands/completion.js";
import { registerConsole } from "./commands/console.js";
import { registerDeliver } from "./commands/deliver.js";
import { registerDoctor } from "./commands/doctor.js";
import { registerDown } from "./commands/down.js";
import { registerHistory } from "./commands/history.js";
import { registerFetch } from "./commands/fetch.js";
import { registerListen } from "./commands/listen.js";
import { registerLogs } from "./commands/logs.js";
import { registerMeshServe } from "./commands/mesh-serve.js";
import { registerMint } from "./commands/mint.js";
import { registerHook } from "./commands/hook.js";
import { registerRoster } from "./commands/roster.js";
import { registerSend } from "./commands/send.js";
import { registerSetup } from "./commands/setup.js";
import { registerStatus } from "./commands/status.js";
import { registerUp } from "./commands/up.js";
import { registerManager } from "./commands/manager.js";
import { registerSeats } from "./commands/seats.js";
import { registerRun } from "./commands/run.js";
import { registerBudget } from "./commands/budget.js";
import { registerWeb } from "./commands/web.js";
import { registerBackup } from "./commands/backup.js";
import { describeError, EXIT, exitCodeOf } from "./errors.js";
import { initCliLogging, settleHeldErrors } from "./logging.js";
import { safeLines } from "./output.js";
import { COTAL_VERSION } from "../schemas/index.js";

/** The `cotal` command: the composition root of every component. */
export function buildProgram(): Command {
  const program = new Command("cotal")
    .description("Cotal: an agent mesh on NATS JetStream. Agents join a space as peers, with presence, channels, DMs and anycast.")
    .version(COTAL_VERSION)
    .option("--log-format <format>", "logs on stderr as text (short lines) or json (default: text on a terminal, json otherwise)")
    .option("--debug", "log at debug level, with stack traces")
    .showHelpAfterError()
    .exitOverride();
  registerUp(program);
  registerDown(program);
  registerStatus(program);
  registerLogs(program);
  registerSend(program);
  registerListen(program);
  registerHistory(program);
  registerFetch(program);
  registerRoster(program);
  registerConsole(program);
  registerWeb(program);
  registerChannels(program);
  registerDeliver(program);
  registerMint(program);
  registerHook(program);
  registerSetup(program);
  registerSeats(program);
  registerRun(program);
  registerBudget(program);
  registerBackup(program);
  registerManager(program);
  registerMeshServe(program);
  registerDoctor(program);
  registerCompletion(program);
  program.addHelpText(
    "after",
    "\nExit codes: 0 done, 1 failed, 2 bad input (fix the command line), 3 no mesh found or the server cannot be reached, " +
      "4 the server refused the credential, 5 the credential may not do this, 6 the mesh service did not answer.\n" +
      "Without --server/--space (or COTAL_SERVER/COTAL_SPACE), commands use the mesh of the nearest .cotal/ folder at or above the working directory.",
  );
  return program;
}

/** Run the CLI and exit with its code. */
export async function main(argv: string[]): Promise<void> {
  // Logging is set up before commander parses (errors while parsing are logged too).
  const format = argv.find((a, i) => argv[i - 1] === "--log-format") ?? argv.find((a) => a.startsWith("--log-format="))?.slice(13);
  const debug = argv.includes("--debug");
  if (format !== undefined && format !== "text" && format !== "json") {
    process.stderr.write(`cotal: Invalid input: --log-format: use text or json (got ${JSON.stringify(format)}).\n`);
    process.exitCode = EXIT.usage;
    return;
  }
  initCliLogging({ format, debug });
  watchdog(argv);
  let code: number = EXIT.ok;
  try {
    await buildProgram().parseAsync(argv);
    code = typeof process.exitCode === "number" ? process.exitCode : EXIT.ok;
  } catch (err) {
    if (err instanceof CommanderError) {
      // Help and --version exit 0; unknown flags, missing arguments… are bad input.
      code = err.exitCode === 0 ? EXIT.ok : EXIT.usage;
    } else {
      code = exitCodeOf(err);
      settleHeldErrors(err); // the sentence below says it: not a log line as well
      process.stderr.write(safeLines(describeError(err)) + "\n");
      if (debug && err instanceof Error && err.stack) process.stderr.write(err.stack + "\n");
    }
  }
  process.exitCode = code;
  // Commands close what they open; should a library handle linger, do not hang the terminal.
  setTimeout(() => process.exit(code), 2_000).unref();
}

/**
 * Commands that ask and answer (not `listen`, `up`, `logs --follow`, `manager`, `fetch`…) have a
 * bound on each wait; this is the net under them: should one still hang, it says so and exits 1.
 */
const SHORT_COMMANDS = new Set(["status", "send", "history", "roster", "channels", "deliver", "mint", "revoke", "down", "ps", "stop"]);
const WATCHDOG_MS = 120_000;

function watchdog(argv: string[]): void {
  const command = argv.slice(2).find((a, i, rest) => !a.startsWith("-") && rest[i - 1] !== "--log-format");
  if (!command || !SHORT_COMMANDS.has(command)) return;
  setTimeout(() => {
    process.stderr.write(
      `cotal: ${command} did not finish within ${WATCHDOG_MS / 1000} s; giving up. This is a bug: run it again with --debug and report what it prints.\n`,
    );
    process.exit(EXIT.failed);
  }, WATCHDOG_MS).unref();
}

await main(process.argv);

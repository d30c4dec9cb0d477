// The root `cotal` command and the runner every bundle shares (logging flags, help, exit codes, the
// watchdog). Which commands it holds is cotal-program.ts (the CLI) or service-main.ts (the services).
import { Command, CommanderError } from "commander";
import { COTAL_VERSION } from "../schemas/index.js";
import { describeError, EXIT, exitCodeOf } from "./terminal/errors.js";
import { initCliLogging, settleHeldErrors } from "./terminal/logging.js";
import { safeLines } from "./terminal/output.js";

/**
 * The root `cotal` command every entry bundle builds on (the CLI's, the services'): its version, the
 * logging flags `runProgram` reads before parsing, help after a usage error, no exit from commander.
 */
export function rootCommand(description: string): Command {
  return new Command("cotal")
    .description(description)
    .version(COTAL_VERSION)
    .option("--log-format <format>", "logs on stderr as text (short lines) or json (default: text on a terminal, json otherwise)")
    .option("--debug", "log at debug level, with stack traces")
    .showHelpAfterError()
    .exitOverride();
}

/** Run a `cotal` program (built by `build`) on `argv` and exit with its code. */
export async function runProgram(argv: string[], build: () => Command): Promise<void> {
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
    await build().parseAsync(argv);
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

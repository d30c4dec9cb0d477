import type { Command } from "commander";
import { runHook } from "../../connector/index.js";

/**
 * `cotal hook <event>`: the Claude command hook, for settings files that call the CLI rather
 * than the small bundled `hook.mjs` (the plugin uses that one: it starts faster). Reads the
 * hook payload on stdin, relays it to this session's connector, prints the reply (or `{}`),
 * and exits 0 whatever happens: a hook never blocks a session.
 */
export function registerHook(program: Command): void {
  program
    .command("hook <event>")
    .summary("relay a Claude hook to this session's connector (registered as a command hook)")
    .description(
      "Used by Claude Code as a command hook: reads the hook's JSON payload on stdin, relays it to the session's " +
        "connector over its authenticated local socket, prints the reply and exits 0. On any internal error it prints " +
        "{} within its time budget, so a session is never blocked. Set COTAL_HOOK_DEBUG=1 to see why on stderr.",
    )
    .action(async (event: string) => {
      const debug = process.env.COTAL_HOOK_DEBUG === "1";
      process.exitCode = await runHook(event, process.stdin, process.env, {
        ...(debug ? { onFallback: (reason: string) => process.stderr.write(`cotal hook: ${reason}\n`) } : {}),
      });
      // Claude waits for the process to exit: never linger on stdin or a socket.
      setTimeout(() => process.exit(process.exitCode ?? 0), 50).unref();
    });
}

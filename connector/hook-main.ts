// Entry of the bundled hook command: `node dist/hook.mjs <event> [--deny-floor] [--flat-context]`, registered as
// a Claude (or Codex) command hook. Prints the connector's reply (or `{}`) and exits 0: it never
// blocks a session, apart from the deny floor's refusal of a command (hook.ts).
import { DENY_FLOOR_HOOK_FLAG, FLAT_CONTEXT_HOOK_FLAG } from "../runtime/index.js";
import { runHook } from "./hook.js";

const debug = process.env.COTAL_HOOK_DEBUG === "1";
process.exitCode = await runHook(process.argv[2], process.stdin, process.env, {
  ...(debug ? { onFallback: (reason: string) => process.stderr.write(`cotal hook: ${reason}\n`) } : {}),
  ...(process.argv.slice(3).includes(DENY_FLOOR_HOOK_FLAG) ? { denyFloor: true } : {}),
  ...(process.argv.slice(3).includes(FLAT_CONTEXT_HOOK_FLAG) ? { flatContext: true } : {}),
});
// Claude waits for the process to exit: never linger on stdin or a socket.
setTimeout(() => process.exit(process.exitCode ?? 0), 50).unref();

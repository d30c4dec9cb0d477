// One `vitest run` as a child process of this node, with the vitest this package installed.
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

const vitest = join(dirname(createRequire(import.meta.url).resolve("vitest/package.json")), "vitest.mjs");

/** Starts `vitest run <args>`; `exited` resolves with its exit code, why it ended and its seconds. */
export function vitestRun(args, opts) {
  const started = Date.now();
  const child = spawn(process.execPath, [vitest, "run", ...args], opts);
  const exited = new Promise((resolve) => {
    const end = (code, why) => resolve({ code, why, secs: ((Date.now() - started) / 1000).toFixed(1) });
    child.on("error", (err) => end(1, err.message));
    child.on("close", (code, signal) => end(code ?? 1, signal ? `killed by ${signal}` : `exit ${code}`));
  });
  return { child, exited };
}

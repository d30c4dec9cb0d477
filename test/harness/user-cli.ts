// An agent CLI run as its user runs it, outside Cotal (after `cotal setup --runtime <name>`), from
// this package's node_modules/.bin: asynchronously, since the model doubles are served from the
// test's own process.
import { spawn } from "node:child_process";
import { join } from "node:path";

/** Run `<bin> <args>` in `cwd` with exactly `env`; resolves with its exit code and its output (stdout then stderr as they came). */
export function runUserCli(bin: string, args: string[], o: { cwd: string; env: NodeJS.ProcessEnv }): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(join(process.cwd(), "node_modules", ".bin", bin), args, { cwd: o.cwd, env: o.env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.setEncoding("utf8").on("data", (s: string) => (out += s));
    child.stderr.setEncoding("utf8").on("data", (s: string) => (out += s));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, out }));
  });
}

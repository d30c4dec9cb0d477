// `npm test`'s checks before vitest: lint, format, typecheck and the bundles, run side by side
// (each is one process and mostly one core; in a row they cost the suite about a minute more).
// Each check's output is printed whole when it ends, so parallel output never interleaves; the
// exit code is non-zero when any check failed, after all have ended.
import { spawn } from "node:child_process";

const CHECKS = [
  ["lint", "npx", ["eslint", "."]],
  ["format", "npx", ["prettier", "--check", "."]],
  ["typecheck", "npx", ["tsc", "-p", "tsconfig.json", "--noEmit"]],
  ["build", process.execPath, ["scripts/build.mjs"]],
];

function run([name, command, args]) {
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (out += d));
    const done = (code, why) => {
      const secs = ((Date.now() - started) / 1000).toFixed(1);
      const verdict = code === 0 ? "ok" : `FAILED (${why})`;
      process.stdout.write(`\n── ${name}: ${verdict}, ${secs} s ── ${command === process.execPath ? "node" : command} ${args.join(" ")}\n${out}`);
      resolve(code === 0);
    };
    child.on("error", (err) => done(1, err.message));
    child.on("close", (code, signal) => done(code ?? 1, signal ? `killed by ${signal}` : `exit ${code}`));
  });
}

const results = await Promise.all(CHECKS.map(run));
const failed = CHECKS.filter((_, i) => !results[i]).map(([name]) => name);
if (failed.length > 0) {
  process.stdout.write(`\nnpm test: ${failed.join(", ")} failed; the tests were not run. Fix them (npm run format writes prettier's layout).\n`);
  process.exit(1);
}

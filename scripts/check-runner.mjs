// The checks `npm test` runs before the tests: lint, format, typecheck and the bundles, side by
// side (each is one process and mostly one core; in a row they cost about a minute more). Each runs
// its package's own bin with this node (no npx in between), and its output is printed whole when
// it ends, so parallel output never interleaves.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

const require = createRequire(import.meta.url);

/** The file a package's bin runs (`bin` in its package.json). */
function binOf(pkg, name) {
  const manifest = require.resolve(`${pkg}/package.json`);
  const { bin } = JSON.parse(readFileSync(manifest, "utf8"));
  return join(dirname(manifest), typeof bin === "string" ? bin : bin[name]);
}

/** Each check: its name and the node arguments that run it. */
export const BUILD = { name: "build", args: ["scripts/build.mjs"] };
export const CHECKS = [
  { name: "lint", args: [binOf("eslint", "eslint"), "."] },
  { name: "format", args: [binOf("prettier", "prettier"), "--check", "."] },
  { name: "typecheck", args: [binOf("typescript", "tsc"), "-p", "tsconfig.json", "--noEmit"] },
];

/** Runs one check to its end and prints its output whole; resolves whether it passed. */
export function runCheck({ name, args }) {
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (out += d));
    const done = (code, why) => {
      const secs = ((Date.now() - started) / 1000).toFixed(1);
      const verdict = code === 0 ? "ok" : `FAILED (${why})`;
      const shown = args.map((a) => a.replace(/^.*node_modules\//, ""));
      process.stdout.write(`\n── ${name}: ${verdict}, ${secs} s ── node ${shown.join(" ")}\n${out}`);
      resolve(code === 0);
    };
    child.on("error", (err) => done(1, err.message));
    child.on("close", (code, signal) => done(code ?? 1, signal ? `killed by ${signal}` : `exit ${code}`));
  });
}

/** The closing advice when checks failed. */
export function failedChecksLine(failed) {
  return `\nnpm test: ${failed.join(", ")} failed; fix ${failed.length > 1 ? "them" : "it"} (npm run format writes prettier's layout).\n`;
}

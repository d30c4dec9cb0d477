// Builds the runnable bundles with esbuild, so start-up never compiles TypeScript.
// Type checking is `npm run typecheck` (tsc --noEmit).
import { build } from "esbuild";
import { chmod, copyFile, mkdir, rename, writeFile } from "node:fs/promises";
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

/**
 * What an agent CLI loads into its own process from Cotal's plugin tree: an adapter folder's
 * `plugin.ts` (OpenCode, Kilo Code: from their config) or `extension.ts` (pi: with -e), bundled as
 * `<runtime>-plugin` or `<runtime>-extension`. The adapter folders are what the registry imports
 * (runtimes/index.ts), so a new runtime's plugin needs no line here.
 */
const adapterFolders = [...readFileSync("runtimes/index.ts", "utf8").matchAll(/from "\.\.\/([a-z-]+)\/index\.js"/g)]
  .map((m) => m[1])
  .filter((f) => f !== "runtime" && f !== "schemas");
const inCliEntries = Object.fromEntries(
  adapterFolders.flatMap((f) => ["plugin", "extension"].filter((kind) => existsSync(`${f}/${kind}.ts`)).map((kind) => [`${f}-${kind}`, `${f}/${kind}.ts`])),
);

/** Entry points: bundle name → source. Each bundle is self-contained (node_modules inlined). */
const entries = {
  ...inCliEntries,
  // Ink and React, loaded by `cotal console` alone (cli/console/console-ink.ts).
  "console-ink": "cli/console/console-ink.ts",
  // What the launchers below run a CommonJS bundle with, from a code cache (cli/code-cache.ts).
  "code-cache": "cli/code-cache.ts",
  connector: "connector/mcp-main.ts",
  hook: "connector/hook-main.ts",
  bench: "bench/bin/mesh.ts",
  "bench-connector": "bench/bin/connector.ts",
  // The raw client's hook and seat, beside which bench-connector measures the connector's.
  "bench-raw-hook": "bench/raw-hook.ts",
  "bench-manager": "bench/bin/manager.ts",
  "bench-wake": "bench/bin/wake.ts",
  "bench-carry": "bench/bin/carry.ts",
  "bench-cluster": "bench/bin/cluster.ts",
  "bench-flood": "bench/bin/flood.ts",
  // What one credential may cost nats-server (docs/security.md); run by hand, not by `npm run bench`.
  "bench-credential-cost": "bench/bin/credential-cost.ts",
  // Where a profiled bench's CPU went (`npm run bench:profile`).
  "bench-profile": "bench/bin/profile.ts",
  // The fault suite on network namespaces (`npm run faults`, docs/reliability.md); needs root.
  faults: "testbed/faults/main.ts",
};

/**
 * The bundles that start most often, the CLI (every `cotal` command, every test's), the services
 * `cotal up` starts (cli/mesh-host/service-process.ts) and the echo seats a manager starts, are CommonJS: Node 20 keeps no compiled code
 * between runs, and a CommonJS bundle can be run from a V8 code cache (cli/code-cache.ts), which
 * ES modules cannot. `dist/<name>.mjs` is a launcher that runs `dist/<name>.cjs` from its cache.
 */
const cachedEntries = {
  cotal: "cli/main.ts",
  "cotal-service": "cli/service-main.ts",
  // A seat process loads only what it runs, so seats cost little: the manager starts echo seats
  // from it, and from the cache a seat's first DM runs code an earlier seat compiled.
  "echo-seat": "manager/echo-seat-main.ts",
};

/** `import.meta.url` of a CommonJS bundle: its own file's (cli/install/package-root.ts finds the package from it). */
const cjsBanner = "var __cotalBundleUrl = require('node:url').pathToFileURL(__filename).href;";

/** The launcher package.json's bin (and cotal up) runs: the CommonJS bundle beside it, from its code cache. */
const launcher = (name) =>
  [
    "#!/usr/bin/env node",
    "// Runs " + name + ".cjs from its V8 code cache (cli/code-cache.ts; built by scripts/build.mjs).",
    'import { fileURLToPath } from "node:url";',
    'import { runBundle } from "./code-cache.mjs";',
    'runBundle(fileURLToPath(new URL("./' + name + '.cjs", import.meta.url)));',
    "",
  ].join("\n");

/**
 * The console's Ink (`import("./console-ink.js")` in cli/console/console-ui.ts) stays outside the CommonJS
 * bundles: the ES module the build writes beside them, imported by its absolute URL (a relative
 * one would resolve against the working directory from a code-cached script).
 */
const inkOutside = {
  name: "ink-outside",
  setup(b) {
    b.onResolve({ filter: /^\.\/console-ink\.js$/ }, () => ({ path: "__COTAL_CONSOLE_INK__", external: true }));
  },
};
const inkImport = "__cotalImport(require('node:url').pathToFileURL(require('node:path').join(__dirname, 'console-ink.mjs')).href)";

/**
 * A CommonJS bundle's text as the launcher may run it from a code cache: no `import()` left, since
 * Node 20 loses a script's dynamic-import callback when its code comes from a cache (cli/code-cache.ts).
 * Node's own modules (`import("node:crypto")` in @nats-io/obj) are required instead, the console's
 * Ink goes through the launcher's `__cotalImport`; any other `import(` fails the build.
 */
function withoutDynamicImport(outfile, text) {
  const out = text
    .replaceAll('import("__COTAL_CONSOLE_INK__")', inkImport)
    .replace(/\bimport\(("node:[a-z_/]+")\)/g, "Promise.resolve().then(() => require($1))");
  const left = [...out.matchAll(/[^\w$.]import\(/g)].map((m) => out.slice(m.index, m.index + 80));
  if (left.length) throw new Error(`${outfile}: dynamic imports the code cache cannot run:\n${left.join("\n")}`);
  return out;
}

/**
 * Options of one bundle beyond the shared ones (none today). Every bundle drops whitespace and
 * comments (`minifyWhitespace`, names kept): a process keeps its bundle's source in its heap for
 * lazy compilation (50 echo seats keep it 50 times, about 2 MiB each less: docs/performance.md),
 * and a CLI call, a hook or a connector start reads, decodes and compiles less (the CLI's bundle
 * 4.7 → 3.4 MB, and the comments' non-ASCII text no longer sends Node's decoder off its ASCII path).
 */
const entryOptions = {};

/**
 * zod's namespaces re-export `locales`, every language it ships: bundled whole, ≈ 300 KB of each
 * bundle that uses zod (a quarter of an echo seat's), read and compiled at every start. Cotal's
 * messages are English: the bundles get a `locales` with `en` alone (scripts/zod-locales-en.mjs).
 */
const zodEnglishOnly = {
  name: "zod-english-only",
  setup(b) {
    b.onResolve({ filter: /^\.\.\/locales\/index\.js$/ }, (args) =>
      /[\\/]node_modules[\\/]zod[\\/]/.test(args.importer) ? { path: fileURLToPath(new URL("./zod-locales-en.mjs", import.meta.url)) } : undefined,
    );
  },
};

// ESM bundles of CommonJS dependencies need require/__dirname.
const banner = [
  "#!/usr/bin/env node",
  "import { createRequire as __cotalCreateRequire } from 'node:module';",
  "import { fileURLToPath as __cotalFileURLToPath } from 'node:url';",
  "import { dirname as __cotalDirname } from 'node:path';",
  "const require = __cotalCreateRequire(import.meta.url);",
  "const __filename = __cotalFileURLToPath(import.meta.url);",
  "const __dirname = __cotalDirname(__filename);",
].join("\n");

const shared = {
  bundle: true,
  platform: "node",
  target: "node20",
  sourcemap: "linked",
  legalComments: "none",
  minifyWhitespace: true,
  // Ink loads React DevTools only when DEV=true; it is not installed: a stub stands in.
  // React and its reconciler pick their development or production build by NODE_ENV at run
  // time, so both were bundled (react-reconciler 779 KB of the CLI's 3.1 MB, read and compiled
  // by every `cotal` call): the production build alone is kept.
  define: { "process.env.NODE_ENV": JSON.stringify("production") },
  alias: { "react-devtools-core": "./scripts/no-react-devtools.mjs" },
  plugins: [zodEnglishOnly],
  logLevel: "warning",
};

await Promise.all([
  ...Object.entries(entries).map(async ([name, entry]) => {
    const outfile = `dist/${name}.mjs`;
    await build({ ...shared, entryPoints: [entry], outfile, format: "esm", banner: { js: banner }, ...entryOptions[name] });
    await chmod(outfile, 0o755);
  }),
  ...Object.entries(cachedEntries).map(async ([name, entry]) => {
    const outfile = `dist/${name}.cjs`;
    await build({
      ...shared,
      entryPoints: [entry],
      outfile,
      format: "cjs",
      banner: { js: cjsBanner },
      define: { ...shared.define, "import.meta.url": "__cotalBundleUrl" },
      plugins: [...shared.plugins, inkOutside],
      write: false,
    }).then(async (r) => {
      for (const f of r.outputFiles) {
        await writeFile(f.path, f.path.endsWith(".cjs") ? withoutDynamicImport(outfile, f.text) : f.text);
      }
    });
    await writeFile(`dist/${name}.mjs`, launcher(name));
    await chmod(`dist/${name}.mjs`, 0o755);
  }),
]);

// The plugin tree (plugin/, rendered from code and committed) runs these bundles from its bin/:
// `claude --plugin-dir plugin/` and `cotal setup` use them. Copied whole, then renamed into place.
await mkdir("plugin/bin", { recursive: true });
for (const name of ["connector", "hook", ...Object.keys(inCliEntries)].flatMap((b) => [`${b}.mjs`, `${b}.mjs.map`])) {
  if (!existsSync(`dist/${name}`)) continue;
  const tmp = `plugin/bin/${name}.tmp-${process.pid}`;
  await copyFile(`dist/${name}`, tmp);
  await rename(tmp, `plugin/bin/${name}`);
}

// The power-loss layer dist/faults.mjs mounts (testbed/lazyfs.ts finds it beside its bundle).
await copyFile("testbed/lazyfs.py", "dist/lazyfs.py");

// Builds the runnable bundles with esbuild, so start-up never compiles TypeScript.
// Type checking is `npm run typecheck` (tsc --noEmit).
import { build } from "esbuild";
import { chmod, copyFile, mkdir, rename } from "node:fs/promises";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

/** Entry points: bundle name → source. Each bundle is self-contained (node_modules inlined). */
const entries = {
  cotal: "cli/main.ts",
  connector: "connector/mcp-main.ts",
  hook: "connector/hook-main.ts",
  // Cotal's OpenCode plugin: OpenCode loads it from its config (docs/runtimes.md).
  "opencode-plugin": "opencode/plugin.ts",
  // A seat process loads only what it runs (issue 30): the manager starts echo seats from it.
  "echo-seat": "manager/echo-seat-main.ts",
  // So do the mesh service and the manager `cotal up` starts (cli/service-process.ts).
  "cotal-service": "cli/service-main.ts",
  bench: "bench/bin/mesh.ts",
  "bench-connector": "bench/bin/connector.ts",
  // The raw client's hook and seat, beside which bench-connector measures the connector's.
  "bench-raw-hook": "bench/raw-hook.ts",
  "bench-manager": "bench/bin/manager.ts",
  "bench-wake": "bench/bin/wake.ts",
  "bench-carry": "bench/bin/carry.ts",
  "bench-cluster": "bench/bin/cluster.ts",
};

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

await Promise.all(
  Object.entries(entries).map(async ([name, entry]) => {
    const outfile = `dist/${name}.mjs`;
    await build({
      entryPoints: [entry],
      outfile,
      bundle: true,
      platform: "node",
      format: "esm",
      target: "node20",
      sourcemap: "linked",
      legalComments: "none",
      minifyWhitespace: true,
      banner: { js: banner },
      // Ink loads React DevTools only when DEV=true; it is not installed: a stub stands in.
      // React and its reconciler pick their development or production build by NODE_ENV at run
      // time, so both were bundled (react-reconciler 779 KB of the CLI's 3.1 MB, read and compiled
      // by every `cotal` call): the production build alone is kept (the CLI's bundle 2.6 MB).
      define: { "process.env.NODE_ENV": JSON.stringify("production") },
      alias: { "react-devtools-core": "./scripts/no-react-devtools.mjs" },
      plugins: [zodEnglishOnly],
      logLevel: "warning",
      ...entryOptions[name],
    });
    await chmod(outfile, 0o755);
  }),
);

// The plugin tree (plugin/, rendered from code and committed) runs these bundles from its bin/:
// `claude --plugin-dir plugin/` and `cotal setup` use them. Copied whole, then renamed into place.
await mkdir("plugin/bin", { recursive: true });
for (const name of ["connector.mjs", "connector.mjs.map", "hook.mjs", "hook.mjs.map", "opencode-plugin.mjs", "opencode-plugin.mjs.map"]) {
  if (!existsSync(`dist/${name}`)) continue;
  const tmp = `plugin/bin/${name}.tmp-${process.pid}`;
  await copyFile(`dist/${name}`, tmp);
  await rename(tmp, `plugin/bin/${name}`);
}

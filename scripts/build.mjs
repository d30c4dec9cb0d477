// Builds the runnable bundles with esbuild, so start-up never compiles TypeScript.
// Type checking is `npm run typecheck` (tsc --noEmit).
import { build } from "esbuild";
import { chmod, copyFile, mkdir, rename } from "node:fs/promises";
import { existsSync } from "node:fs";

/** Entry points: bundle name → source. Each bundle is self-contained (node_modules inlined). */
const entries = {
  cotal: "cli/main.ts",
  connector: "connector/mcp-main.ts",
  hook: "connector/hook-main.ts",
  bench: "bench/main.ts",
  "bench-connector": "bench/connector-hook.ts",
  "bench-manager": "bench/manager.ts",
  "bench-wake": "bench/claude-wake.ts",
  "bench-carry": "bench/carry.ts",
  "bench-cluster": "bench/cluster.ts",
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
      banner: { js: banner },
      // Ink loads React DevTools only when DEV=true; it is not installed: a stub stands in.
      alias: { "react-devtools-core": "./scripts/no-react-devtools.mjs" },
      logLevel: "warning",
    });
    await chmod(outfile, 0o755);
  }),
);

// The plugin tree (plugin/, rendered from code and committed) runs these bundles from its bin/:
// `claude --plugin-dir plugin/` and `cotal setup` use them. Copied whole, then renamed into place.
await mkdir("plugin/bin", { recursive: true });
for (const name of ["connector.mjs", "connector.mjs.map", "hook.mjs", "hook.mjs.map"]) {
  if (!existsSync(`dist/${name}`)) continue;
  const tmp = `plugin/bin/${name}.tmp-${process.pid}`;
  await copyFile(`dist/${name}`, tmp);
  await rename(tmp, `plugin/bin/${name}`);
}

// Architectural guards of the connector.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { build } from "esbuild";
import { describe, expect, it } from "vitest";
import { projectRoot } from "../harness/claude-runner.js";

describe("connector guards", () => {
  it("the hook command stays small: no NATS client, no MCP SDK, no full zod in its bundle", async () => {
    const r = await build({
      entryPoints: [path.join(projectRoot, "connector", "hook-main.ts")],
      bundle: true,
      platform: "node",
      format: "esm",
      write: false,
      metafile: true,
      logLevel: "silent",
    });
    const inputs = Object.keys(r.metafile.inputs);
    expect(inputs.length).toBeGreaterThan(3);
    const heavy = inputs.filter((f) => /@nats-io|@modelcontextprotocol|pino|zod\/v4\/classic|\/broker\/|\/schemas\//.test(f));
    expect(heavy).toEqual([]);
    expect(r.outputFiles[0]!.contents.byteLength).toBeLessThan(120_000);
  });

  it("connector/ builds no claude command line (that is connector/claude/'s job) and imports other packages only through their index", () => {
    const files = readdirSync(path.join(projectRoot, "connector"), { recursive: true })
      .map(String)
      .filter((f) => f.endsWith(".ts") && !f.startsWith(`claude${path.sep}`));
    expect(files.length).toBeGreaterThan(10);
    for (const f of files) {
      const src = readFileSync(path.join(projectRoot, "connector", f), "utf8");
      expect(src, f).not.toMatch(/spawn\([^)]*claude|["'`]claude["'`]\s*,\s*\[/);
      for (const m of src.matchAll(/from "\.\.\/(\w+)\/([^"]+)"/g)) expect(`${m[1]}/${m[2]}`, f).toMatch(/^\w+\/index\.js$|^package\.json$/);
    }
  });
});

// cli/ imports other components only through their public entries, and its top level holds only
// the bundles' entries and the program: everything else sits in a folder named for its concern.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { projectRoot } from "../harness/cli.js";

describe("architecture", () => {
  it("cli/ imports broker/ and schemas/ only through their index.ts, and nothing from connector/ or manager/ internals", () => {
    const files: string[] = [];
    const walk = (dir: string) => {
      for (const f of readdirSync(dir)) {
        const p = join(dir, f);
        if (statSync(p).isDirectory()) walk(p);
        else if (p.endsWith(".ts")) files.push(p);
      }
    };
    walk(join(projectRoot, "cli"));
    expect(files.length).toBeGreaterThan(10);
    const offenders: string[] = [];
    for (const f of files) {
      for (const m of readFileSync(f, "utf8").matchAll(/from "(\.[^"]+)"/g)) {
        const spec = m[1]!;
        if (/\/(broker|schemas|connector|manager)\//.test(spec) && !/\/(broker|schemas|connector|manager)\/index\.js$/.test(spec)) {
          offenders.push(`${relative(projectRoot, f)}: ${spec}`);
        }
      }
    }
    expect(offenders).toEqual([]);
  });

  it("cli/'s top level holds only the bundles' entries and the program (docs/architecture.md has the folders)", () => {
    const top = readdirSync(join(projectRoot, "cli")).filter((f) => f.endsWith(".ts"));
    expect(top.sort()).toEqual(["code-cache.ts", "cotal-program.ts", "main.ts", "root-command.ts", "service-main.ts"]);
  });
});

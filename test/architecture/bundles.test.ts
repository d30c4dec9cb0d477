// What the shipped bundles carry (scripts/build.mjs). zod's `locales` namespace re-exports every
// language it ships, ≈ 300 KB that each process would read and compile at every start; the build
// keeps English alone (docs/performance.md, spawn → joined). Long-lived processes load their own
// bundles, not the CLI's whole one. Checked on the built files.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { BUNDLES, ensureBuilt } from "../harness/build.js";

/** The CommonJS bundle a launcher (dist/cotal.mjs, cotal-service.mjs, echo-seat.mjs) runs from its code cache. */
const code = (launcher: string): string => launcher.replace(/\.mjs$/, ".cjs");

describe("bundles", () => {
  it("carry zod's English messages and no other language", () => {
    ensureBuilt();
    const bundles = [code(BUNDLES.cli), code(BUNDLES.service), BUNDLES.connector, code(path.join(path.dirname(BUNDLES.cli), "echo-seat.mjs"))];
    for (const file of bundles) {
      const text = readFileSync(file, "utf8");
      // English, as zod words it (the CLI and the wire's refusals quote it).
      expect(text, file).toContain("Invalid input: expected ");
      // German and French, two of the languages zod ships, are not there (words without accents:
      // the bundles escape what is not ASCII).
      expect(text, file).not.toContain("erwartet instanceof");
      expect(text, file).not.toMatch(/attendu/);
    }
  });

  it("the services' bundle runs the mesh service, the manager and its seats, and leaves the console's Ink out", () => {
    ensureBuilt();
    // Ink's layout engine and React's reconciler are the console's alone, in their own module.
    expect(readFileSync(path.join(path.dirname(BUNDLES.cli), "console-ink.mjs"), "utf8")).toContain("loadYoga");
    for (const file of [code(BUNDLES.cli), code(BUNDLES.service)]) {
      expect(readFileSync(file, "utf8"), file).not.toContain("loadYoga");
      expect(readFileSync(file, "utf8"), file).not.toContain("reconciler");
    }
    const run = (...args: string[]) => spawnSync(process.execPath, [BUNDLES.service, ...args], { encoding: "utf8", timeout: 30_000 });
    for (const command of [["mesh", "serve"], ["manager"], ["agent", "echo"]]) {
      const help = run(...command, "--help");
      expect(help.status, `${command.join(" ")} --help: ${help.stderr}`).toBe(0);
      expect(help.stdout).toContain(`Usage: cotal ${command.join(" ")}`);
    }
    // What the CLI alone does is not here: a clear usage error, exit 2.
    const other = run("console");
    expect(other.status).toBe(2);
    expect(other.stderr).toContain("unknown command 'console'");
  });
});

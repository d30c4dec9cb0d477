// What the shipped bundles carry (scripts/build.mjs). zod's `locales` namespace re-exports every
// language it ships, ≈ 300 KB that each process would read and compile at every start; the build
// keeps English alone (docs/performance.md, spawn → joined). Checked on the built files.
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { BUNDLES, ensureBuilt } from "../harness/build.js";

describe("bundles", () => {
  it("carry zod's English messages and no other language", () => {
    ensureBuilt();
    const bundles = [BUNDLES.cli, BUNDLES.connector, path.join(path.dirname(BUNDLES.cli), "echo-seat.mjs")];
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
});

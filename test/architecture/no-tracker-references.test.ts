// Code, tests and docs say the reason itself: no comment, test name or doc points at a tracker the
// repository does not have ("issue 25, route 7") or at a file outside it (the team's field notes).
// Such pointers once stood in 110 places; a reader could follow none of them.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
/** What the project writes by hand: its tracked text files, not what is installed or built. */
const TEXT = /\.(ts|tsx|mjs|js|md|sh|json|ya?ml)$/;
const BUILT = /^(node_modules|dist|plugin\/bin)\//;
const POINTERS: Array<[RegExp, string]> = [
  [/\b[Ii]ssue #?\d+\b/, "an issue number"],
  [/FIELD-NOTES/, "the field notes (a file outside the repository)"],
  [/\.\.\/shared\//, "a folder outside the repository"],
];

describe("no pointer outside the repository", () => {
  it("no tracked source, test or doc names an issue number or a file outside the repository", () => {
    const files = execFileSync("git", ["ls-files"], { cwd: root, encoding: "utf8" })
      .split("\n")
      .filter((f) => TEXT.test(f) && !BUILT.test(f));
    expect(files.length, "files scanned").toBeGreaterThan(300);
    const found: string[] = [];
    for (const f of files) {
      const lines = readFileSync(join(root, f), "utf8").split("\n");
      lines.forEach((line, i) => {
        for (const [re, what] of POINTERS) if (re.test(line) && f !== "test/architecture/no-tracker-references.test.ts") found.push(`${f}:${i + 1}: ${what}`);
      });
    }
    expect(found).toEqual([]);
  });
});

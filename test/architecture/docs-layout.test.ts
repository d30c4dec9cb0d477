// The docs' lists of folders and runtimes are claims about the tree: the README's Layout table has
// a row for every folder the project tracks (and none for a folder that is gone), and every list
// of runtimes (the README's, `cotal doctor`'s checks in docs/cli.md, runtimes.md's table) names
// every agent CLI the registry can seat. When OpenCode and Gemini CLI were added, the README still
// said "(Claude, Codex)" with no row for either folder, and cli.md's doctor row lacked Gemini.
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { RUNTIMES } from "../../runtimes/index.js";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const readme = readFileSync(join(root, "README.md"), "utf8");
const doc = (name: string) => readFileSync(join(root, "docs", name), "utf8");

/** Folders .gitignore names (installed, built, or written by a run): not the project's. */
const UNTRACKED = new Set(
  readFileSync(join(root, ".gitignore"), "utf8")
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => /^[^#*!]/.test(l))
    .map((l) => l.replace(/^\//, "").replace(/\/$/, "")),
);

/** The section of the README under `## <title>`, up to the next `## `. */
function section(title: string): string {
  const start = readme.indexOf(`\n## ${title}\n`);
  expect(start, `README has a "## ${title}" section`).toBeGreaterThan(-1);
  const end = readme.indexOf("\n## ", start + 1);
  return readme.slice(start, end === -1 ? undefined : end);
}

describe("README", () => {
  it("the Layout table has a row for every top-level folder of the project, and only for those", () => {
    const rows = [...section("Layout").matchAll(/^\| `([^`/]+)\/` \|/gm)].map((m) => m[1]!);
    const folders = readdirSync(root, { withFileTypes: true })
      .filter((d) => d.isDirectory() && !d.name.startsWith(".") && !UNTRACKED.has(d.name))
      .map((d) => d.name);
    expect(rows.sort()).toEqual(folders.sort());
  });

  it("the documentation table's runtimes row and the dependency paragraph name every runtime the registry seats", () => {
    const runtimesRow = section("Documentation")
      .split("\n")
      .find((l) => l.includes("docs/runtimes.md"));
    const dependencies = section("Layout").slice(section("Layout").indexOf("Dependencies point one way"));
    for (const r of RUNTIMES) {
      expect(runtimesRow, `docs row names ${r.label}`).toContain(r.label);
      expect(dependencies, `dependency paragraph names ${r.name}/`).toContain(`\`${r.name}/\``);
    }
  });
});

describe("docs", () => {
  it("cotal doctor's runtime checks (cli.md) and runtimes.md's table name every runtime the registry seats", () => {
    const doctorRow = doc("cli.md")
      .split("\n")
      .find((l) => l.startsWith("| one per runtime of the registry"));
    const runtimesTable = doc("runtimes.md")
      .split("\n")
      .filter((l) => l.startsWith("| "));
    for (const r of RUNTIMES) {
      expect(doctorRow, `doctor row names ${r.name}`).toContain(`\`${r.name}\``);
      expect(doctorRow, `doctor row names ${r.label}`).toContain(r.label);
      expect(
        runtimesTable.some((l) => l.includes(`\`${r.name}/\``) && l.includes(`\`${r.name}Runtime\``)),
        `runtimes.md has a row for ${r.name}/`,
      ).toBe(true);
    }
  });

  it("runtimes.md's capability flags table has a row per runtime of the registry, each saying what its adapter declares", () => {
    const text = doc("runtimes.md");
    const start = text.indexOf("### Capability flags, a row per runtime");
    expect(start, "runtimes.md has a capability flags table").toBeGreaterThan(-1);
    const rows = text
      .slice(start)
      .split("\n")
      .filter((l) => l.startsWith("| "));
    const header = rows[0]!
      .split("|")
      .slice(2, -1)
      .map((c) => c.trim());
    const cell = (v: unknown): string => (v === true ? "yes" : v === false ? "no" : String(v));
    const table = Object.fromEntries(
      rows.slice(1).map((l) => {
        const cells = l
          .split("|")
          .slice(1, -1)
          .map((c) => c.trim());
        return [cells[0]!.replaceAll("`", ""), Object.fromEntries(header.map((h, i) => [h, cells[i + 1]]))];
      }),
    );
    expect(Object.keys(table).sort()).toEqual(RUNTIMES.map((r) => r.name).sort());
    for (const r of RUNTIMES) {
      expect(header.sort(), "the table has a column per capability").toEqual(Object.keys(r.capabilities).sort());
      expect(table[r.name], `${r.name}'s row`).toEqual(Object.fromEntries(Object.entries(r.capabilities).map(([k, v]) => [k, cell(v)])));
    }
  });
});

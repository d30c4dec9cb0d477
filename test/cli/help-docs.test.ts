// docs/cli.md stays in step with `--help`: for every command and subcommand the CLI lists, each flag
// its --help shows appears in that command's section of docs/cli.md, and each flag the section's
// usage blocks and flag tables name is one the command (or a subcommand) really has. The help is
// commander's, read from the program the CLI runs (cli/cotal-program.ts) in this process: one
// `cotal … --help` process per command cost this file ≈ 60 CLI starts; the built CLI's own --help
// is test/cli/help.e2e.test.ts's.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { Command } from "commander";
import { beforeAll, describe, expect, it } from "vitest";
import { buildProgram } from "../../cli/cotal-program.js";
import { projectRoot } from "../harness/cli.js";
import { RUNTIMES } from "../../runtimes/index.js";

/** Options every command has through the root program, documented once. */
const GLOBAL = new Set(["--help", "--version", "--log-format", "--debug"]);

/** `cotal <path> --help`'s text, as commander writes it (200 columns: no flag wraps onto a line of its own). */
function help(path: string[]): string {
  let cmd: Command = program;
  for (const name of path) cmd = cmd.commands.find((c) => c.name() === name)!;
  return cmd.configureHelp({ helpWidth: 200 }).helpInformation();
}

/** The lines of one `Name:` block of commander's help. */
function block(text: string, name: string): string[] {
  const lines = text.split("\n");
  const start = lines.findIndex((l) => l === `${name}:`);
  if (start < 0) return [];
  const out: string[] = [];
  for (const l of lines.slice(start + 1)) {
    if (l.trim() === "" || !l.startsWith(" ")) break;
    out.push(l);
  }
  return out;
}

function flagsOf(text: string): string[] {
  return block(text, "Options").flatMap((l) => {
    const m = /^\s{2}(?:-\w, )?(--[a-z][a-z0-9-]*)/.exec(l);
    return m ? [m[1]!] : [];
  });
}

/** Long flag → its short alias (`--output` → `-o`), where --help lists one. */
function shortsOf(text: string): Map<string, string> {
  return new Map(
    block(text, "Options").flatMap((l) => {
      const m = /^\s{2}(-\w), (--[a-z][a-z0-9-]*)/.exec(l);
      return m ? [[m[2]!, m[1]!] as [string, string]] : [];
    }),
  );
}

function subcommandsOf(text: string): string[] {
  return block(text, "Commands").flatMap((l) => {
    const m = /^\s{2}([a-z][a-z0-9-]*)/.exec(l);
    return m && m[1] !== "help" ? [m[1]!] : [];
  });
}

interface Cmd {
  path: string[];
  flags: string[];
  shorts: Map<string, string>;
}

function walk(path: string[]): Cmd[] {
  const text = help(path);
  return [{ path, flags: flagsOf(text), shorts: shortsOf(text) }, ...subcommandsOf(text).flatMap((s) => walk([...path, s]))];
}

/** Whether `section` names `flag`, long or by its short alias (`-o FILE` documents `--output`). */
function documents(section: string, flag: string, short: string | undefined): boolean {
  if (new RegExp(`${flag}(?![a-z0-9-])`).test(section)) return true;
  return short !== undefined && new RegExp(`(^|[\\s\\[|(\`])${short}(?![\\w-])`).test(section);
}

/** docs/cli.md's sections by the commands of their heading (`## \`cotal deliver pending\``; one heading may name several). */
function sections(md: string): Map<string, string> {
  const out = new Map<string, string>();
  const parts = md.split(/^## /m).slice(1);
  for (const p of parts) {
    const heading = p.split("\n")[0]!;
    if (!heading.startsWith("`cotal ")) continue;
    for (const m of heading.matchAll(/`cotal ([a-z][a-z -]*)`/g)) out.set(m[1]!.trim(), p);
  }
  return out;
}

/** The flags a section names where it defines them: its usage code blocks and its flag tables. */
function definedFlags(section: string): Set<string> {
  const out = new Set<string>();
  for (const code of section.match(/```[\s\S]*?```/g) ?? []) {
    for (const line of code.split("\n").filter((l) => /^\s*cotal /.test(l) || /^\s+\[/.test(l)))
      for (const f of line.match(/--[a-z][a-z0-9-]*/g) ?? []) out.add(f);
  }
  for (const row of section.split("\n").filter((l) => l.startsWith("| `--"))) out.add(/--[a-z][a-z0-9-]*/.exec(row)![0]);
  return out;
}

let commands: Cmd[];
let docs: Map<string, string>;

let program: Command;

beforeAll(() => {
  program = buildProgram();
  commands = walk([]).filter((c) => c.path.length > 0);
  docs = sections(readFileSync(join(projectRoot, "docs", "cli.md"), "utf8"));
}, 120_000);

describe("docs/cli.md is in step with --help", () => {
  it("walked the CLI's commands and their flags", () => {
    expect(commands.length).toBeGreaterThan(15);
    expect(commands.find((c) => c.path.join(" ") === "send dm")?.flags).toContain("--attach");
  });

  it("every command and subcommand has a section, and every flag of its --help is in it", () => {
    const missing: string[] = [];
    for (const c of commands) {
      const hasSubcommands = commands.some((o) => o.path.length > c.path.length && c.path.every((p, i) => o.path[i] === p));
      if (hasSubcommands && c.flags.every((f) => GLOBAL.has(f))) continue; // `deliver`: its subcommands carry the docs
      const section = sectionFor(c.path);
      if (!section) {
        missing.push(`cotal ${c.path.join(" ")}: no "## \`cotal ${c.path[0]}\`" section`);
        continue;
      }
      for (const f of c.flags) if (!GLOBAL.has(f) && !documents(section, f, c.shorts.get(f))) missing.push(`cotal ${c.path.join(" ")} ${f}`);
    }
    expect(missing).toEqual([]);
  });

  it("every flag a section's usage and tables name is a flag of that command", () => {
    const extra: string[] = [];
    for (const [name, section] of docs) {
      // A section shared by several commands (one heading naming them all) may name any of their flags.
      const names = [...docs].filter(([, s]) => s === section).map(([n]) => n.split(" "));
      const own = new Set(commands.filter((c) => names.some((path) => path.every((p, i) => c.path[i] === p))).flatMap((c) => c.flags));
      if (!commands.some((c) => c.path.join(" ") === name)) {
        extra.push(`section cotal ${name}: no such command`);
        continue;
      }
      for (const f of definedFlags(section)) if (!own.has(f) && !GLOBAL.has(f)) extra.push(`cotal ${name} ${f}`);
    }
    expect(extra).toEqual([]);
  });
});

/** The section of the longest heading that is a prefix of `path` (`send msg` lives under `cotal send`). */
function sectionFor(path: string[]): string | undefined {
  for (let n = path.length; n > 0; n--) {
    const s = docs.get(path.slice(0, n).join(" "));
    if (s) return s;
  }
  return undefined;
}

/**
 * Lists of agent CLIs in a text: runs of words joined by `, `, `|`, `/`, ` or `, ` and ` that name at
 * least three runtimes of the registry. Fewer is an example ("claude and codex seats"), not a list.
 */
function runtimeLists(text: string): string[][] {
  const names = new Set(RUNTIMES.map((r) => r.name));
  const out: string[][] = [];
  for (const m of text.matchAll(/[a-z][a-z0-9-]*(?:(?:, (?:and |or )?| ?\| ?|\/| or | and )[a-z][a-z0-9-]*){2,}/g)) {
    const words = m[0].split(/, (?:and |or )?| ?\| ?|\/| or | and /);
    if (words.filter((w) => names.has(w)).length >= 3) out.push(words);
  }
  return out;
}

describe("lists of runtimes follow the registry", () => {
  it("every list of agent CLIs in --help and in docs/ names exactly the registry's runtimes", () => {
    const want = RUNTIMES.map((r) => r.name).sort();
    const texts: Array<[string, string]> = [
      ...commands.map((c): [string, string] => [`cotal ${c.path.join(" ")} --help`, help(c.path)]),
      ...readdirSync(join(projectRoot, "docs"))
        .filter((f) => f.endsWith(".md"))
        .map((f): [string, string] => [`docs/${f}`, readFileSync(join(projectRoot, "docs", f), "utf8")]),
      ["README.md", readFileSync(join(projectRoot, "README.md"), "utf8")],
    ];
    let seen = 0;
    const wrong: string[] = [];
    for (const [where, text] of texts)
      for (const list of runtimeLists(text)) {
        seen++;
        const named = [...new Set(list.filter((w) => want.includes(w)))].sort();
        if (named.join(",") !== want.join(",")) wrong.push(`${where}: ${list.join(", ")}`);
      }
    expect(seen, "found lists of runtimes to check").toBeGreaterThan(3);
    expect(wrong).toEqual([]);
  });
});
